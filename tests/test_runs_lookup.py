"""`Runs.lookup`: where an analysis is now (finished in memory, running here, or stored), on both databases.

The analyses are the real Analyzer's on the test vocabulary, held after their first event until the test lets
them go, so "running" is a state the test can look at rather than a race it may lose.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from engine.analysis import Analyzer, BackendRouter
from engine.cache import MemoryCache
from engine.detector import Detector
from engine.events import Event
from web.models import AnalysisRecord
from web.runs import Runs
from web.store import Store

TEXT = "a faggot and a junkie"


class Held:
    """The analyzer's stream, held after its first event until `gate` is set."""

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self.gate = asyncio.Event()

    async def analyze(self, *args: Any, **kwargs: Any) -> AsyncIterator[Event]:
        first = True
        async for event in self.analyzer.analyze(*args, **kwargs):
            yield event
            if first:
                first = False
                await self.gate.wait()


def held_runs(detector: Detector, store: Store) -> tuple[Runs, Held]:
    held = Held(Analyzer(detector, BackendRouter(None), cache=MemoryCache()))
    return Runs(held, store), held  # type: ignore[arg-type]


async def until_first_event(runs: Runs, analysis_id: str) -> None:
    run = runs.current(analysis_id)
    assert run is not None
    for _ in range(500):  # bounded: the first event comes from the vocabulary stage, in milliseconds
        if run.events:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the run produced no event")


async def test_a_stored_analysis_is_found_and_an_unknown_one_is_not(detector: Detector, store: Store) -> None:
    runs, _ = held_runs(detector, store)
    store.create_analysis(AnalysisRecord(id="a-pending", text=TEXT, source="api"))
    found = await runs.lookup("a-pending")
    assert found is not None and (found.record.status, found.record.source, found.events) == ("pending", "api", [])
    assert await runs.lookup("nowhere") is None
    await runs.shutdown()


async def test_a_running_analysis_is_found_running_then_stored(detector: Detector, store: Store) -> None:
    runs, held = held_runs(detector, store)
    record = AnalysisRecord(id="a-run", text=TEXT, requested_language="en", source="api")
    store.create_analysis(record)
    runs.start(record.id, record.text, "en", "fast", detached=True)
    await until_first_event(runs, record.id)

    running = await runs.lookup(record.id)
    assert running is not None and running.record.status == "running"
    assert [e["type"] for e in running.events] == ["analysis"]  # what the run has produced so far
    # a record the caller has just read keeps its own fields (source, creation time), with the run's state
    stored = store.analysis(record.id)
    assert stored is not None
    seen = await runs.lookup(record.id, stored)
    assert seen is not None and (seen.record.status, seen.record.created_at) == ("running", stored.created_at)
    assert stored.status == "running"  # written when the run claimed it: every node sees it running
    assert seen.record is not stored  # the caller's record is not changed

    held.gate.set()
    task = runs.current(record.id).task  # type: ignore[union-attr]
    assert task is not None
    await task
    finished = await runs.lookup(record.id)
    assert finished is not None and finished.record.status == "complete"
    assert finished.events[0]["type"] == "analysis" and finished.events[-1]["type"] == "done"
    await runs.shutdown()


async def test_a_no_store_analysis_is_found_in_memory(detector: Detector, store: Store) -> None:
    runs, held = held_runs(detector, store)
    held.gate.set()
    run = runs.start("a-memory", TEXT, "en", "fast", detached=True, persist=False)
    assert run.task is not None
    await run.task
    found = await runs.lookup("a-memory")
    assert found is not None and found.record.status == "complete" and found.events[-1]["type"] == "done"
    assert store.analysis("a-memory") is None  # never stored
    await runs.shutdown()
