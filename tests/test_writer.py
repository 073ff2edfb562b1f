"""The group-commit writer: many finished analyses per transaction, each caller answered only once its own is stored.

Run on a real SQLite file and, when configured, on a real PostgreSQL server (the `store` fixture of test_storage).
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session, select

from web.models import AnalysisRecord, DecisionRecord, HitRecord
from web.store import Finished, GroupWriter, Store

from .support.stores import EVENTS
from .webapp import client


def events_of(analysis_id: str) -> list[dict[str, Any]]:
    """tests/support/stores.py's small finished stream (one hit, one verdict, a decision) for this analysis."""
    events = copy.deepcopy(EVENTS)
    events[0]["data"]["analysis_id"] = analysis_id
    return events


def finished(analysis_id: str) -> Finished:
    record = AnalysisRecord(id=analysis_id, text="a junkie", requested_language="en", source="api")
    return Finished(analysis_id, events_of(analysis_id), new=record)


def stored_counts(store: Store) -> tuple[Counter[str], Counter[str], Counter[str]]:
    """How many analysis, hit and decision rows each analysis id has."""
    with Session(store.engine) as session:
        analyses = Counter(session.exec(select(AnalysisRecord.id)).all())
        hits = Counter(session.exec(select(HitRecord.analysis_id)).all())
        decisions = Counter(session.exec(select(DecisionRecord.analysis_id)).all())
    return analyses, hits, decisions


async def test_concurrent_saves_are_each_stored_once_in_few_commits(store: Store) -> None:
    writer = GroupWriter(store, max_batch=64)
    ids = [f"c{n:03d}" for n in range(150)]
    await asyncio.gather(*(writer.save(finished(i)) for i in ids))
    analyses, hits, decisions = stored_counts(store)
    assert analyses == hits == decisions == Counter(ids)  # every analysis with its rows, none twice
    assert all(store.analysis(i).status == "complete" for i in ids[:3])  # type: ignore[union-attr]
    # they were queued together, so they share commits: ceil(150 / 64) batches
    assert writer.commits == 3
    # one more while nothing else is queued: it waits for its own commit only
    await writer.save(finished("alone"))
    assert writer.commits == 4 and store.analysis("alone") is not None
    await writer.close()


async def test_an_analysis_the_database_refuses_fails_alone(store: Store) -> None:
    store.save_new(finished("taken").new, events_of("taken"))  # type: ignore[arg-type]
    writer = GroupWriter(store)
    outcomes = await asyncio.gather(
        writer.save(finished("ok1")),
        writer.save(finished("taken")),
        writer.save(finished("ok2")),
        return_exceptions=True,
    )
    assert outcomes[0] is None and outcomes[2] is None
    assert isinstance(outcomes[1], IntegrityError)  # the duplicate id reaches its own caller
    analyses, hits, _ = stored_counts(store)
    assert analyses == hits == Counter({"ok1": 1, "taken": 1, "ok2": 1})
    await writer.close()


async def test_a_failing_commit_reaches_every_caller(store: Store) -> None:
    with store.engine.begin() as connection:
        connection.execute(text('DROP TABLE "hit"'))  # a real failure: the insert of the hit rows fails
    writer = GroupWriter(store)
    outcomes = await asyncio.gather(*(writer.save(finished(f"f{n}")) for n in range(3)), return_exceptions=True)
    assert all(isinstance(outcome, SQLAlchemyError) for outcome in outcomes)
    # nothing half-written: the analysis rows were rolled back with the hits
    assert analysis_rows(store) == 0
    await writer.close()


def analysis_rows(store: Store) -> int:
    with Session(store.engine) as session:
        return len(session.exec(select(AnalysisRecord.id)).all())


async def test_close_writes_what_is_queued_and_later_saves_still_store(store: Store) -> None:
    writer = GroupWriter(store)
    pending = [asyncio.create_task(writer.save(finished(f"q{n}"))) for n in range(20)]
    await asyncio.sleep(0)  # queued, not yet written
    await writer.close()
    assert all(task.done() and task.exception() is None for task in pending)
    await writer.save(finished("late"))  # a request finishing after shutdown is stored on its own
    analyses, _, _ = stored_counts(store)
    assert analyses == Counter([f"q{n}" for n in range(20)] + ["late"])


async def test_a_caller_that_goes_away_does_not_lose_its_analysis(store: Store) -> None:
    writer = GroupWriter(store)
    task = asyncio.create_task(writer.save(finished("gone")))
    await asyncio.sleep(0)
    task.cancel()  # a client hanging up while its analysis waits for the commit
    with pytest.raises(asyncio.CancelledError):
        await task
    await writer.close()
    assert store.analysis("gone") is not None


def test_an_answered_analysis_is_readable_at_once_from_another_worker(tmp_path: Path) -> None:
    # two apps on one data directory are what `uvicorn --workers 2` runs: each has its own writer
    with client(tmp_path) as first, client(tmp_path) as second:

        def post_then_read(n: int) -> tuple[int, str, str]:
            created = first.post("/api/v1/analyses", json={"text": f"a junkie, number {n}", "lang": "en"})
            document = created.json()
            again = second.get(f"/api/v1/analyses/{document['id']}")
            return again.status_code, again.json()["status"], again.json()["decision"]["label"]

        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(post_then_read, range(64)))
        writer = first.app.state.services.runs.writer  # type: ignore[attr-defined]
    assert results == [(200, "complete", "flagged")] * 64
    assert writer.commits < 64  # concurrent requests shared commits
