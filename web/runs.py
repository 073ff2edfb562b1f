"""Running analyses while someone listens, in one process or many sharing a database.

A run is one engine event stream for one stored analysis, produced by the one process that claimed the analysis in
the database (web/analysis_log.py). Every event is stored before anyone is shown it, numbered by its position, so
a listener anywhere replays what was produced so far and follows the rest, and a reconnect with `Last-Event-ID`
resumes exactly, on this node or another:

- a listener in the owning process follows the run in memory (no database read per event);
- a listener elsewhere follows the stored events, woken by the owner's signals (web/signals.py) or by polling;
- a listener that finds nobody running the analysis (pending, or its owner's lease ran out) claims it and runs it
  here, after the events already stored.

A run lives while it has a listener here or was started detached (`Prefer: respond-async`, widget checks): when
its last listener goes away before `done`, the run is cancelled with every model call it was waiting for, and the
analysis goes back to pending. Processes that run jobs (`run_jobs`) also take over detached analyses nobody runs
(`maintain`), so nothing stays pending when a node dies. The finished stream is stored whole (Store.save_many).

Deliberate choices (do not "fix"):
- Events are shown only once stored, even to a listener in the owning process, so no client ever holds an event
  that another node numbers differently. Except the head of the stream, the `analysis` event and the hits: they
  are the same, in the same order, whoever produces them (matching is deterministic), so a process that takes an
  analysis over numbers them as the first one did, and readers get the first hit without waiting for a write.
- Without a listener, events are stored in groups (IDLE_FLUSH_SECONDS): a vocabulary-only analysis finishes before
  the first group is due and costs one write, the final one, as it did before processes shared work.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field

from starlette.concurrency import run_in_threadpool

from engine.analysis import Analyzer
from engine.errors import UneraseError
from engine.events import Done, ErrorEvent
from engine.result import StoredEvent, stored
from engine.scope import Scope
from web.analysis_log import AnalysisLog, LostClaim, event_key, new_node_id
from web.models import AnalysisRecord
from web.signals import WORK_SIGNAL, Signals, analysis_signal
from web.store import Finished, GroupWriter, Store

log = logging.getLogger("unerase.runs")

MEMORY_ANALYSES = 5_000
IDLE_FLUSH_SECONDS = 0.1  # how long events wait to be stored together when nobody is listening
HEAD = frozenset({"analysis", "hit"})  # the events any producer of an analysis produces alike, first (module doc)
TAKE_AT_ONCE = 50  # detached analyses one look of `maintain` claims
MAX_LOCAL_RUNS = 500  # `maintain` claims nothing more while this process runs as many


@dataclass(frozen=True)
class Coordination:
    """How this process takes part among the processes sharing the database (docs/deploy.md)."""

    node: str = field(default_factory=new_node_id)
    lease_seconds: float = 15.0
    run_jobs: bool = True  # takes detached analyses nobody runs; false: leaves them to `unerase worker`s


@dataclass(frozen=True)
class Found:
    """An analysis where it is now: its record (status "running" while some process produces it) and its events
    so far."""

    record: AnalysisRecord
    events: list[StoredEvent]


@dataclass
class Run:
    analysis_id: str
    detached: bool = False
    persist: bool = True  # False for no-store sites: nothing is written, the finished stream stays in memory
    record: AnalysisRecord | None = None
    events: list[StoredEvent] = field(default_factory=list)  # shown; the index is the event's number
    stored: int = 0  # how many of the first events are stored (all shown ones, but for the head)
    unsaved: list[StoredEvent] = field(default_factory=list)  # produced, neither stored nor shown yet
    head: bool = True  # only head events so far: they are shown at once
    over: bool = False  # no more events will come from this run (done, cancelled, or its claim was lost)
    lost: bool = False  # another process holds the analysis now
    listeners: int = 0
    task: asyncio.Task[None] | None = None
    flusher: asyncio.Task[None] | None = None
    writing: bool = False  # the flusher is storing a group (it must not be cancelled then)
    hurry: asyncio.Event = field(default_factory=asyncio.Event)  # a listener came: store what waits now
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)


class Runs:
    def __init__(
        self,
        analyzer: Analyzer,
        store: Store,
        writer: GroupWriter | None = None,
        coordination: Coordination | None = None,
        signals: Signals | None = None,
        scope_of: Callable[[str], Scope | None] | None = None,
    ) -> None:
        """`scope_of(analysis_id)` (blocking) gives the term rules of the site an analysis belongs to, for a run
        that continues an analysis another request or process started (the widget knows them, web.widget)."""
        self.analyzer = analyzer
        self.store = store
        # finished streams are stored through it, many per commit (the synchronous API's analyses too)
        self.writer = writer or GroupWriter(store)
        self.coordination = coordination or Coordination()
        self.log = AnalysisLog(store.engine, self.coordination.node, self.coordination.lease_seconds)
        self.signals = signals or Signals(store.engine)
        self.scope_of = scope_of
        self._runs: dict[str, Run] = {}
        # finished analyses that must not be stored (no-store sites), newest last, bounded
        self.memory: OrderedDict[str, tuple[AnalysisRecord, list[StoredEvent]]] = OrderedDict()
        self._stopping = asyncio.Event()
        self._maintenance: asyncio.Task[None] | None = None

    @property
    def node(self) -> str:
        return self.coordination.node

    def running(self, analysis_id: str) -> bool:
        run = self._runs.get(analysis_id)
        return run is not None and not run.over

    def current(self, analysis_id: str) -> Run | None:
        return self._runs.get(analysis_id)

    # -- where an analysis is --------------------------------------------------------------
    async def lookup(self, analysis_id: str, stored: AnalysisRecord | None = None) -> Found | None:
        """Where analysis X is: finished in memory (no-store sites), running here, or in the database (running
        elsewhere, or stored); None if nowhere. A run here stores its stream before it shows `done`, so a run that
        has not shown it holds the newest events, and one that has is read where it was stored.
        `stored`: the record the caller has just read from the database, read again only if needed."""
        kept = self.memory.get(analysis_id)
        if kept is not None:
            return Found(kept[0], list(kept[1]))
        run = self._runs.get(analysis_id)
        if run is not None and run.record is not None and not run.over and not (stored and stored.status == "complete"):
            if not (run.events and run.events[-1]["type"] == "done"):
                record = stored if stored is not None else run.record
                # a snapshot carries no event numbers, so it may hold what is not stored yet (module doc)
                return Found(record.model_copy(update={"status": "running"}), [*run.events, *run.unsaved])
            stored = None  # it finished since the caller read it: read what was stored
        if stored is not None and stored.status == "complete":
            # read and parsed in a thread: a widget check looks up to 100 posts, and a stream can be long
            return await run_in_threadpool(lambda: Found(stored, json.loads(stored.events)))
        snapshot = await run_in_threadpool(self.log.snapshot, analysis_id)
        if snapshot is None:
            return None
        return Found(snapshot.record, [event for _, event in snapshot.events])

    # -- starting --------------------------------------------------------------------------
    def prepare(self, record: AnalysisRecord, *, detached: bool = True) -> AnalysisRecord:
        """Sets up a new, not yet stored record for a request that wants it analysed at once: claimed by this
        process, or, for background work (`detached`: respond-async, widget checks) on a process that leaves it to
        the `unerase worker`s, waiting for one of them. `launch` it once stored. Returns the record."""
        record.detached = detached
        if detached and not self.coordination.run_jobs:
            return record
        record.status, record.owner = "running", self.node
        record.lease_until = time.time() + self.coordination.lease_seconds
        return record

    async def launch(self, records: Sequence[AnalysisRecord], scope: Scope | None = None) -> None:
        """Starts the analyses of prepared, stored records here, and tells the processes that run jobs about the
        ones queued for them (one signal for all)."""
        queued = False
        for record in records:
            if record.owner != self.node:
                queued = True
                continue
            self.start(
                record.id,
                record.text,
                record.requested_language,
                record.mode,
                detached=record.detached,
                scope=scope,
                claimed=True,
                fresh=True,
            )
        if queued:
            await run_in_threadpool(self.log.call_workers)

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
        claimed: bool = False,
        fresh: bool = False,
    ) -> Run:
        """Runs the analysis here unless it already runs here. Unless `claimed` (this process holds it already),
        the run first claims it in the database and ends at once, with no events, if another process holds it;
        its listeners then follow that process through the database. Unless `fresh` (stored a moment ago), the
        run continues after the events already stored."""
        run = self._runs.get(analysis_id)
        if run is None or run.over or run.task is None or run.task.cancelling() or run.task.done():
            # a run being cancelled (its last listener just left) is not joined: a new one starts
            record = AnalysisRecord(id=analysis_id, text=text, requested_language=language, mode=mode)
            run = self._runs[analysis_id] = Run(analysis_id, detached=detached, persist=persist, record=record)
            run.task = asyncio.create_task(self._produce(run, record, scope, claimed or not persist, fresh))
        run.detached = run.detached or detached
        return run

    async def settle(self, analysis_ids: Sequence[str], timeout: float) -> None:
        """Waits until these analyses are complete, or `timeout` seconds: here by their runs, elsewhere by reading
        the database when signalled (or polled)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        here = [run.task for i in analysis_ids if (run := self._runs.get(i)) is not None and run.task is not None]
        if here:
            await asyncio.wait(here, timeout=timeout)
        for analysis_id in analysis_ids:
            if analysis_id in self._runs or analysis_id in self.memory:
                continue
            while (left := deadline - loop.time()) > 0:
                if await run_in_threadpool(self.log.status, analysis_id) in (None, "complete"):
                    break
                await self.signals.wait(analysis_signal(analysis_id), min(left, self.signals.poll_seconds))

    # -- listening -------------------------------------------------------------------------
    async def events_of(
        self, record: AnalysisRecord, *, detached: bool = False, after: int = -1
    ) -> AsyncIterator[tuple[int, StoredEvent]]:
        """The analysis's events numbered after `after`, to `done`: replayed from the database, followed in the run
        here, or followed in the database while another process runs it; started here when nobody runs it."""
        kept = self.memory.get(record.id)
        if kept is not None:
            for number, event in enumerate(kept[1]):
                if number > after:
                    yield number, event
            return
        position = after + 1
        while True:
            run = self._runs.get(record.id)
            if run is not None and not run.over:
                async for number, event in self._follow(run, position):
                    position = number + 1
                    yield number, event
                    if event["type"] == "done":
                        return
                continue  # the run here stopped before `done` (its claim was lost): see the database
            snapshot = await run_in_threadpool(self.log.snapshot, record.id, position - 1)
            if snapshot is None:
                return  # deleted
            for number, event in snapshot.events:
                position = number + 1
                yield number, event
                if event["type"] == "done":
                    return
            found = snapshot.record
            if found.status == "complete":
                return
            mine = found.status == "running" and found.owner == self.node  # claimed here, not started yet
            if mine or (snapshot.claimable(time.time()) and self._may_run(found, detached)):
                self.start(found.id, found.text, found.requested_language, found.mode, detached=detached, claimed=mine)
                continue
            await self.signals.wait(analysis_signal(record.id))

    def _may_run(self, record: AnalysisRecord, detached: bool) -> bool:
        """A listener runs an analysis itself unless it is background work this process leaves to workers."""
        return self.coordination.run_jobs or not (record.detached or detached)

    async def _follow(self, run: Run, position: int) -> AsyncIterator[tuple[int, StoredEvent]]:
        """The run's events from `position` on; leaving early may cancel the run (see module doc)."""
        run.listeners += 1
        run.hurry.set()
        try:
            while True:
                async with run.changed:
                    await run.changed.wait_for(lambda seen=position: len(run.events) > seen or run.over)  # type: ignore[misc]
                    fresh = [(number, run.events[number]) for number in range(position, len(run.events))]
                    over = run.over
                for number, event in fresh:
                    position = number + 1
                    yield number, event
                    if event["type"] == "done":
                        return
                if over and position >= len(run.events):
                    return
        finally:
            run.listeners -= 1
            if run.listeners == 0 and not run.over and not run.detached and run.task is not None:
                run.task.cancel()

    # -- producing -------------------------------------------------------------------------
    async def _produce(self, run: Run, record: AnalysisRecord, scope: Scope | None, claimed: bool, fresh: bool) -> None:
        try:
            try:
                if not claimed and not await run_in_threadpool(self.log.claim, run.analysis_id, run.detached):
                    return  # another process runs it: listeners here follow it through the database
                skip: Counter[str] = Counter()
                if run.persist and not fresh:
                    if scope is None and self.scope_of is not None:
                        # a site's analysis started elsewhere: the same term rules as where it began
                        scope = await run_in_threadpool(self.scope_of, run.analysis_id)
                    # claimed from a pending or abandoned analysis: continue after what is stored
                    snapshot = await run_in_threadpool(self.log.snapshot, run.analysis_id)
                    prefix = [event for _, event in snapshot.events] if snapshot is not None else []
                    skip.update(event_key(event) for event in prefix)
                    run.head = all(event["type"] in HEAD for event in prefix)
                    await self._show(run, prefix)
                    run.stored = len(prefix)
                events = self.analyzer.analyze(
                    record.text, record.requested_language, record.mode, run.analysis_id, scope
                )
                async for event in events:
                    item = stored(event)
                    key = event_key(item)
                    if skip[key]:
                        skip[key] -= 1  # the previous owner stored it already
                        continue
                    if item["type"] == "done":
                        await self._finish(run, record, item)
                    else:
                        await self._produced(run, item)
            except UneraseError as exc:
                if isinstance(exc, LostClaim):
                    raise
                # the input was checked before the analysis was created, so this is rare (a
                # vocabulary reloaded without a language, say); it still ends the stream properly
                await self._produced(run, stored(ErrorEvent(exc.code, exc.message, "input")))
                await self._finish(run, record, stored(Done(0.0, cached=False)))
        except LostClaim:
            log.warning("analysis %s was taken over by another process; this one stops", run.analysis_id)
            run.lost = True
        except asyncio.CancelledError:
            # nothing more is stored: the analysis is given up for the next listener or process to continue
            if run.persist and not run.lost:
                await asyncio.shield(self._give_up(run))
            raise
        except Exception:
            log.exception("analysis %s failed", run.analysis_id)
            await self._stop_flusher(run)
            if run.persist and not run.lost:
                with contextlib.suppress(Exception):
                    await run_in_threadpool(self.log.fail, run.analysis_id)
            if not run.events or run.events[-1]["type"] != "done":
                failure = [
                    stored(ErrorEvent("internal-error", "the analysis failed", "server")),
                    stored(Done(0.0, cached=False)),  # not stored: it may be retried
                ]
                await self._show(run, failure)
        finally:
            if run.flusher is not None and not run.writing:
                run.flusher.cancel()
            async with run.changed:
                run.over = True
                run.changed.notify_all()
            if self._runs.get(run.analysis_id) is run:
                del self._runs[run.analysis_id]

    async def _produced(self, run: Run, event: StoredEvent) -> None:
        if run.head and event["type"] in HEAD:
            await self._show(run, [event])  # stored with the next group; shown now (module doc)
        else:
            run.head = False
            run.unsaved.append(event)
        if run.flusher is None or run.flusher.done():
            run.flusher = asyncio.create_task(self._flush(run))

    async def _flush(self, run: Run) -> None:
        """Stores what the run produced, in groups, and then shows what waited for it (module doc)."""
        if run.persist and not run.listeners:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(run.hurry.wait(), IDLE_FLUSH_SECONDS)
        else:
            await asyncio.sleep(0)  # what the engine produces in one go is stored together
        while (run.stored < len(run.events) or run.unsaved) and not run.over:
            group, run.unsaved = run.unsaved, []
            first, batch = run.stored, [*run.events[run.stored :], *group]
            if run.persist:
                run.writing = True
                try:
                    await run_in_threadpool(self.log.append, run.analysis_id, first, batch)
                except LostClaim:
                    run.lost = True
                    if run.task is not None:
                        run.task.cancel()
                    return
                finally:
                    run.writing = False
            run.stored = first + len(batch)
            await self._show(run, group)

    async def _stop_flusher(self, run: Run) -> None:
        """Lets a group being stored finish (its events are shown), and stops a flusher that only waits."""
        flusher = run.flusher
        if flusher is None or flusher.done():
            return
        if not run.writing:
            flusher.cancel()
        await asyncio.gather(flusher, return_exceptions=True)

    async def _give_up(self, run: Run) -> None:
        await self._stop_flusher(run)
        try:
            await run_in_threadpool(self.log.release, run.analysis_id, run.detached)
        except Exception:  # the lease runs out on its own; another process takes the analysis then
            log.warning("could not give up analysis %s", run.analysis_id, exc_info=True)

    async def _finish(self, run: Run, record: AnalysisRecord, done: StoredEvent) -> None:
        """Stores the whole stream, then shows what was not shown, `done` last: a listener that has seen `done`
        (and hangs up, as the browser does) finds the result stored, and its leaving cannot cancel the save."""
        await self._stop_flusher(run)
        if run.lost:
            raise LostClaim(f"analysis {run.analysis_id} was taken over while it was being stored")
        rest = [*run.unsaved, done]
        run.unsaved = []
        events = [*run.events, *rest]
        if run.persist:
            await self.writer.save(Finished(run.analysis_id, events, owner=self.node))
        else:
            self.memory[run.analysis_id] = (record.model_copy(update={"status": "complete"}), events)
            while len(self.memory) > MEMORY_ANALYSES:
                self.memory.popitem(last=False)
        run.stored = len(events)
        await self._show(run, rest)

    async def _show(self, run: Run, events: list[StoredEvent]) -> None:
        if not events:
            return
        async with run.changed:
            run.events.extend(events)
            run.changed.notify_all()
        self.signals.wake(analysis_signal(run.analysis_id))
        # let listeners send them now: without a model the engine would otherwise run to `done` in one go,
        # and the first hit would reach the reader only with the last event
        await asyncio.sleep(0)

    # -- keeping claims, taking over -------------------------------------------------------------
    async def maintain(self) -> None:
        """Renews this process's leases every third of `lease_seconds`; a process that runs jobs also takes over
        analyses nobody runs (detached ones queued by web nodes, and those whose owner's lease ran out). Ends when
        `shutdown` asks, never in the middle of a database call (a connection left behind would outlive the app)."""
        period = self.coordination.lease_seconds / 3
        while not self._stopping.is_set():
            try:
                if any(run.persist for run in self._runs.values()):
                    await run_in_threadpool(self.log.renew)
                if self.coordination.run_jobs and len(self._runs) < MAX_LOCAL_RUNS:
                    await self.take_over()
            except Exception:  # the database is unreachable for now: try again next period
                log.warning("keeping analysis claims failed; trying again", exc_info=True)
            await self.signals.wait(WORK_SIGNAL, period)

    async def take_over(self) -> int:
        """Claims and runs (detached) the analyses nobody runs; returns how many it started."""
        started = 0
        for analysis_id in await run_in_threadpool(self.log.claimable, TAKE_AT_ONCE):
            if analysis_id in self._runs:
                continue
            record = await run_in_threadpool(self.store.analysis, analysis_id)
            if record is None:
                continue
            run = self.start(record.id, record.text, record.requested_language, record.mode, detached=True)
            started += run.task is not None
        return started

    async def begin(self) -> None:
        """Starts listening for other processes, and the maintenance loop."""
        self.signals.start()
        self._maintenance = asyncio.create_task(self.maintain(), name="unerase-runs")

    async def shutdown(self) -> None:
        """Stops the maintenance loop, cancels unfinished runs (each gives its analysis up for another process or a
        later listener), then writes every finished result still queued."""
        self._stopping.set()
        self.signals.wake(WORK_SIGNAL)
        if self._maintenance is not None:
            await asyncio.gather(self._maintenance, return_exceptions=True)
        tasks = [run.task for run in self._runs.values() if run.task is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.writer.close()
        self.signals.stop()
