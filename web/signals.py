"""Waking a waiter when another process changed something it waits for.

Processes that share a database learn of each other's writes by reading it. To read soon after a write without
reading all the time, a writer sends a *signal* (a short key such as "analysis:<id>") and a waiter sleeps until
that key is signalled or its poll interval ends, whichever comes first:

- PostgreSQL: `NOTIFY` sent in the writer's own transaction (delivered at commit, never before the data is
  visible), received by one `LISTEN`ing connection per process, on a thread of its own, and handed to the waiters
  of that key on the event loop.
- SQLite (one machine): there is no notification; waiters poll (`poll_seconds`). Signals sent in this process still
  wake this process's waiters at once.

A signal is only a hint to look now: a lost one costs one poll interval, never correctness, so waiters always
re-read the database after waking.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import defaultdict

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine

log = logging.getLogger("unerase.signals")

CHANNEL = "unerase"
POSTGRES_POLL_SECONDS = 1.0  # a safety net under LISTEN: a notification lost with a dropped connection
SQLITE_POLL_SECONDS = 0.2


def is_postgres(engine: Engine | Connection) -> bool:
    return engine.dialect.name == "postgresql"


def send(connection: Connection, *keys: str) -> None:
    """Signals `keys` when `connection`'s transaction commits (PostgreSQL); nothing elsewhere."""
    if is_postgres(connection) and keys:
        connection.execute(text("SELECT pg_notify(:channel, :key)"), [{"channel": CHANNEL, "key": k} for k in keys])


class Signals:
    """This process's waiters, woken by local signals and, on PostgreSQL, by other processes' NOTIFYs."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.listens = is_postgres(engine)
        self.poll_seconds = POSTGRES_POLL_SECONDS if self.listens else SQLITE_POLL_SECONDS
        self._waiters: defaultdict[str, set[asyncio.Event]] = defaultdict(set)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Starts listening (PostgreSQL); call it from the event loop that will wait."""
        self._loop = asyncio.get_running_loop()
        if self.listens and self._thread is None:
            self._thread = threading.Thread(target=self._listen, name="unerase-listen", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    async def wait(self, key: str, timeout: float | None = None) -> bool:
        """Until `key` is signalled (True) or `timeout` (default: the poll interval) passes (False)."""
        woken = asyncio.Event()
        self._waiters[key].add(woken)
        try:
            async with asyncio.timeout(self.poll_seconds if timeout is None else timeout):
                await woken.wait()
            return True
        except TimeoutError:
            return False
        finally:
            waiters = self._waiters.get(key)
            if waiters is not None:
                waiters.discard(woken)
                if not waiters:
                    del self._waiters[key]

    def wake(self, key: str) -> None:
        """Wakes this process's waiters of `key` (call it on the event loop)."""
        for woken in self._waiters.get(key, ()):
            woken.set()

    def _listen(self) -> None:
        """The LISTEN loop: reconnects after a failure, so a database restart only costs polls meanwhile."""
        import psycopg  # only on PostgreSQL, which needs the driver anyway

        url = self.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
        while not self._stop.is_set():
            try:
                with psycopg.connect(url, autocommit=True) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    while not self._stop.is_set():
                        for notice in connection.notifies(timeout=0.5):
                            self._deliver(notice.payload)
            except Exception:  # any failure of the connection: wait, then listen again
                log.warning("listening for other processes' changes failed; polling meanwhile", exc_info=True)
                self._stop.wait(self.poll_seconds)

    def _deliver(self, key: str) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(self.wake, key)


def analysis_signal(analysis_id: str) -> str:
    """Signalled when an analysis's stored events or state change."""
    return f"analysis:{analysis_id}"


WORK_SIGNAL = "work:analyses"  # a detached analysis waits for a process that runs jobs
