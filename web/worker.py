"""`unerase worker`: a node that does the background work and serves no HTTP.

Its shape is: build the Services, run a list of background loops (batch jobs) and the analyses' upkeep (taking
over detached analyses nobody runs, web/runs.py), stop them on SIGTERM or SIGINT. The same loops
run inside the web app when `run_jobs` is true (web/app.py), so `make serve` stays one process doing both, and a
deployment can instead give web nodes `run_jobs=false` and run the work in as many workers as it likes, on any
machines that reach the database (docs/deploy.md).

A loop is anything with `run()` (works until stopped) and `stop()` (take no new work; let `run` return once the
work in hand is settled). On a signal every loop is asked to stop and given STOP_SECONDS; what is still running
then is cancelled, and the loops give back what they held (batch rows are released for other workers). The
exit status is 0 after a signal, 1 when a loop failed on its own.

`unerase worker` runs jobs whatever `run_jobs` says: that setting is about a process that also serves HTTP.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Sequence
from typing import Protocol

from web.batch_worker import BatchWorker
from web.services import Services
from web.settings import Settings

log = logging.getLogger("unerase.worker")
# in-flight work may finish for this long after a stop request; under the 10 s Docker waits before its SIGKILL
STOP_SECONDS = 8.0


class BackgroundLoop(Protocol):
    async def run(self) -> None: ...

    def stop(self) -> None: ...


def job_loops(services: Services, batch_wake: asyncio.Event | None = None) -> list[BackgroundLoop]:
    """The background work of a node that runs jobs. `batch_wake` is set by the node's routes when they queue a
    batch job, so its own worker starts on it at once."""
    return [BatchWorker(services, batch_wake)]


class Background:
    """Loops running as tasks, stopped together."""

    def __init__(self, loops: Sequence[BackgroundLoop]) -> None:
        self.loops = list(loops)
        self.tasks: list[asyncio.Task[None]] = []
        self._stopping = False

    def start(self) -> None:
        self.tasks = [asyncio.create_task(loop.run(), name=type(loop).__name__) for loop in self.loops]
        for task in self.tasks:
            task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        """A loop that ends before it is stopped is logged at once (in the web app nobody else would notice)."""
        if task.cancelled() or self._stopping:
            return
        if task.exception() is None:
            log.error("background loop %s ended by itself", task.get_name())
        else:
            log.error("background loop %s failed", task.get_name(), exc_info=task.exception())

    async def until(self, stop: asyncio.Event) -> bool:
        """Waits for `stop`, or for a loop to end on its own; returns whether a loop ended on its own."""
        stopped = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait([stopped, *self.tasks], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        return any(task is not stopped for task in done)

    async def stop(self) -> None:
        self._stopping = True
        for loop in self.loops:
            loop.stop()
        if not self.tasks:
            return
        _, late = await asyncio.wait(self.tasks, timeout=STOP_SECONDS)
        for task in late:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def serve(settings: Settings) -> int:
    """Runs the job loops until SIGTERM or SIGINT; the process's exit status."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)  # also during the build below: it then starts nothing
    # a worker runs jobs whatever run_jobs says (module doc): batch rows, and the analyses nobody runs
    services = await asyncio.to_thread(Services.build, settings.model_copy(update={"run_jobs": True}))
    background = Background(job_loops(services))
    failed = False
    try:
        if not stop.is_set():
            background.start()
            await services.runs.begin()
            log.info("worker %s started: batch jobs and detached analyses on %s", services.node, _where(settings))
            failed = await background.until(stop)
    finally:
        await background.stop()
        await services.runs.shutdown()
        await services.aclose()
        log.info("worker %s stopped", services.node)
    return 1 if failed else 0


def _where(settings: Settings) -> str:
    url = settings.resolved_database_url
    return url.split("@", 1)[-1] if "@" in url else url  # never the password


def main(settings: Settings) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return asyncio.run(serve(settings))
