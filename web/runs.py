"""Running analyses while someone listens.

A run is one engine event stream for one stored analysis. Listeners replay what was produced so
far and then follow it live, so a permalink opened mid-analysis, a second tab and a late SSE
reconnect all see the same stream without running the work twice. A run lives while it has a
listener (or was started detached, for `Prefer: respond-async` clients): when the last listener
goes away before `done`, the run is cancelled and with it every model call it was waiting for.
The finished stream is stored; later listeners replay it from the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.concurrency import run_in_threadpool

from engine.analysis import Analyzer
from engine.errors import UneraseError
from engine.events import Done, ErrorEvent
from engine.result import StoredEvent, stored
from engine.scope import Scope
from web.models import AnalysisRecord
from web.store import Finished, GroupWriter, Store

log = logging.getLogger("unerase.runs")


MEMORY_ANALYSES = 5_000


@dataclass(frozen=True)
class Found:
    """An analysis where it is now: its record (status "running" while a run here produces it) and its events
    so far."""

    record: AnalysisRecord
    events: list[StoredEvent]


@dataclass
class Run:
    analysis_id: str
    detached: bool = False
    persist: bool = True  # False for no-store sites: the finished stream is kept in memory only
    record: AnalysisRecord | None = None
    events: list[StoredEvent] = field(default_factory=list)
    finished: bool = False
    listeners: int = 0
    task: asyncio.Task[None] | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)


class Runs:
    def __init__(self, analyzer: Analyzer, store: Store, writer: GroupWriter | None = None) -> None:
        self.analyzer = analyzer
        self.store = store
        # finished streams are stored through it, many per commit (the synchronous API's analyses too)
        self.writer = writer or GroupWriter(store)
        self._runs: dict[str, Run] = {}
        # finished analyses that must not be stored (no-store sites), newest last, bounded
        self.memory: OrderedDict[str, tuple[AnalysisRecord, list[StoredEvent]]] = OrderedDict()

    def running(self, analysis_id: str) -> bool:
        return analysis_id in self._runs

    def current(self, analysis_id: str) -> Run | None:
        return self._runs.get(analysis_id)

    async def lookup(self, analysis_id: str, stored: AnalysisRecord | None = None) -> Found | None:
        """Where analysis X is: finished in memory (no-store sites), running here, or in the store; None if
        nowhere. In that order: a run stores its stream before it publishes `done`, so a run that has not
        published it holds the newest events, and one that has is readable where it was stored.
        `stored`: the record the caller has just read from the store, read again only if needed."""
        kept = self.memory.get(analysis_id)
        if kept is not None:
            return Found(kept[0], list(kept[1]))
        run = self._runs.get(analysis_id)
        if run is not None and run.record is not None and (stored is None or stored.status != "complete"):
            if not (run.events and run.events[-1]["type"] == "done"):
                record = stored if stored is not None else run.record
                return Found(record.model_copy(update={"status": "running"}), list(run.events))
            stored = None  # it finished since the caller read it: read what was stored
        # read and parsed in a thread: a widget check looks up to 100 posts, and a stream can be long
        return await run_in_threadpool(self._stored, analysis_id, stored)

    def _stored(self, analysis_id: str, stored: AnalysisRecord | None) -> Found | None:
        record = stored if stored is not None else self.store.analysis(analysis_id)
        return None if record is None else Found(record, json.loads(record.events))

    def start(
        self,
        analysis_id: str,
        text: str,
        language: str | None,
        mode: str,
        *,
        detached: bool = False,
        persist: bool = True,
        scope: Scope | None = None,
    ) -> Run:
        run = self._runs.get(analysis_id)
        if run is None or run.task is None or run.task.cancelling() or run.task.done():
            # a run being cancelled (its last listener just left) is not joined: a new one starts
            record = AnalysisRecord(id=analysis_id, text=text, requested_language=language, mode=mode)
            run = self._runs[analysis_id] = Run(analysis_id, detached=detached, persist=persist, record=record)
            run.task = asyncio.create_task(self._produce(run, record, scope))
        run.detached = run.detached or detached
        return run

    async def events_of(self, record: AnalysisRecord, *, detached: bool = False) -> AsyncIterator[StoredEvent]:
        """A finished analysis replayed from the database, or its run followed (started if needed)."""
        if record.id in self.memory:
            for event in self.memory[record.id][1]:
                yield event
            return
        if record.status != "complete" and not self.running(record.id):
            latest: AnalysisRecord | None = await run_in_threadpool(self.store.analysis, record.id)
            record = latest or record  # it may have finished a moment ago
        if record.status == "complete":
            for event in json.loads(record.events):
                yield event
            return
        run = self.start(record.id, record.text, record.requested_language, record.mode, detached=detached)
        async for event in self.follow(run):
            yield event

    async def follow(self, run: Run) -> AsyncIterator[StoredEvent]:
        """Every event of the run from the first; leaving early may cancel the run (see module doc)."""
        run.listeners += 1
        position = 0
        try:
            while True:
                async with run.changed:
                    await run.changed.wait_for(lambda seen=position: len(run.events) > seen or run.finished)  # type: ignore[misc]
                    fresh = run.events[position:]
                    finished = run.finished
                position += len(fresh)
                for event in fresh:
                    yield event
                    if event["type"] == "done":
                        return
                if finished and position >= len(run.events):
                    return
        finally:
            run.listeners -= 1
            ended = run.finished or (run.events and run.events[-1]["type"] == "done")
            if run.listeners == 0 and not ended and not run.detached and run.task is not None:
                run.task.cancel()

    async def _produce(self, run: Run, record: AnalysisRecord, scope: Scope | None = None) -> None:
        # "running" is not written to the database: a running analysis is the one in `_runs`, and a
        # write per analysis would cost more than the whole vocabulary stage
        try:
            try:
                events = self.analyzer.analyze(
                    record.text, record.requested_language, record.mode, run.analysis_id, scope
                )
                async for event in events:
                    if event.type == "done":
                        await self._finish(run, record, stored(event))
                    else:
                        await self._publish(run, stored(event))
            except UneraseError as exc:
                # the input was checked before the analysis was created, so this is rare (a
                # vocabulary reloaded without a language, say); it still ends the stream properly
                await self._publish(run, stored(ErrorEvent(exc.code, exc.message, "input")))
                await self._finish(run, record, stored(Done(0.0, cached=False)))
        except asyncio.CancelledError:
            raise  # nothing was stored: the analysis is still pending, and a new listener starts it again
        except Exception:
            log.exception("analysis %s failed", run.analysis_id)
            if run.persist:
                with contextlib.suppress(Exception):
                    await run_in_threadpool(self.store.set_status, run.analysis_id, "failed")
            if not run.events or run.events[-1]["type"] != "done":
                await self._publish(run, stored(ErrorEvent("internal-error", "the analysis failed", "server")))
                await self._publish(run, stored(Done(0.0, cached=False)))  # not stored: it may be retried
        finally:
            async with run.changed:
                run.finished = True
                run.changed.notify_all()
            if self._runs.get(run.analysis_id) is run:
                del self._runs[run.analysis_id]

    async def _finish(self, run: Run, record: AnalysisRecord, done: StoredEvent) -> None:
        """Stores the whole stream, then sends `done`: a listener that has seen `done` (and hangs up, as
        the browser does) finds the result stored, and its leaving cannot cancel the save."""
        events = [*run.events, done]
        if run.persist:
            await self.writer.save(Finished(run.analysis_id, events))
        else:
            self.memory[run.analysis_id] = (record.model_copy(update={"status": "complete"}), events)
            while len(self.memory) > MEMORY_ANALYSES:
                self.memory.popitem(last=False)
        await self._publish(run, done)

    async def _publish(self, run: Run, event: StoredEvent) -> None:
        async with run.changed:
            run.events.append(event)
            run.changed.notify_all()
        # let listeners send it now: without a model the engine would otherwise run to `done` in one go,
        # and the first hit would reach the reader only with the last event
        await asyncio.sleep(0)

    async def shutdown(self) -> None:
        """Cancels unfinished runs (they stay pending), then writes every finished result still queued."""
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.writer.close()
