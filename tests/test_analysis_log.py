"""The database side of running analyses (web/analysis_log.py), on SQLite and PostgreSQL: one claimant wins, leases
are renewed and run out, an owner that lost its claim cannot write a taken position, a snapshot never skips a
position, and a run that takes an analysis over continues after the events already stored (web/runs.py).

Times are passed in (`now=`), so no test waits for a lease to run out.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from threading import Barrier

import pytest
from sqlmodel import Session

from engine.analysis import Analyzer, BackendRouter
from engine.cache import MemoryCache
from engine.detector import Detector
from engine.result import StoredEvent, stored
from web.analysis_log import AnalysisLog, LostClaim, event_key
from web.models import AnalysisRecord, Site, SiteTermRule
from web.runs import Coordination, Runs
from web.sites import Sites
from web.store import Store
from web.widget import Widget

TEXT = "a faggot and a junkie"
NOW = 1_000_000.0


def event(kind: str, **data: object) -> StoredEvent:
    return {"type": kind, "data": data}


def logs(store: Store, *nodes: str, lease: float = 10.0) -> list[AnalysisLog]:
    return [AnalysisLog(store.engine, node, lease) for node in nodes]


def test_one_of_several_claimants_wins(store: Store) -> None:
    store.create_analysis(AnalysisRecord(id="a1", text=TEXT))
    claimants = logs(store, *(f"node-{i}" for i in range(6)))
    together = Barrier(len(claimants))

    def claim(log: AnalysisLog) -> bool:
        together.wait(timeout=10)
        return log.claim("a1", now=NOW)

    with ThreadPoolExecutor(len(claimants)) as pool:
        won = list(pool.map(claim, claimants))
    assert won.count(True) == 1
    record = store.analysis("a1")
    assert record is not None and record.status == "running"
    assert record.owner == claimants[won.index(True)].node and record.lease_until == NOW + 10.0


def test_a_lease_is_renewed_by_its_owner_and_taken_over_once_it_ran_out(store: Store) -> None:
    store.create_analysis(AnalysisRecord(id="a1", text=TEXT))
    owner, other = logs(store, "owner", "other")
    assert owner.claim("a1", now=NOW)
    assert not other.claim("a1", now=NOW + 9.0)  # the lease still holds
    assert owner.renew(now=NOW + 9.0) == 1
    assert not other.claim("a1", now=NOW + 18.0)  # renewed until NOW + 19
    assert other.claimable(10, now=NOW + 18.0) == []
    assert other.claimable(10, now=NOW + 19.5) == ["a1"]  # the owner stopped renewing: it died
    assert other.claim("a1", now=NOW + 19.5)
    assert owner.renew(now=NOW + 20.0) == 0  # it holds nothing any more
    record = store.analysis("a1")
    assert record is not None and record.owner == "other"


def test_an_owner_that_lost_its_claim_cannot_write_a_taken_position(store: Store) -> None:
    store.create_analysis(AnalysisRecord(id="a1", text=TEXT))
    stalled, successor = logs(store, "stalled", "successor")
    assert stalled.claim("a1", now=NOW)
    stalled.append("a1", 0, [event("analysis", id="a1"), event("hit", id="h1")])
    assert successor.claim("a1", now=NOW + 60.0)  # the first owner stalled past its lease
    successor.append("a1", 2, [event("hit", id="h2")])
    with pytest.raises(LostClaim):
        stalled.append("a1", 2, [event("verdict", hit_id="h1")])
    snapshot = successor.snapshot("a1")
    assert snapshot is not None
    assert [(n, e["type"]) for n, e in snapshot.events] == [(0, "analysis"), (1, "hit"), (2, "hit")]
    assert [n for n, _ in successor.snapshot("a1", after=1).events] == [2]  # type: ignore[union-attr]


def test_released_analyses_go_back_to_pending_or_to_the_workers(store: Store) -> None:
    for analysis_id in ("listened", "detached"):
        store.create_analysis(AnalysisRecord(id=analysis_id, text=TEXT))
    (node,) = logs(store, "node")
    assert node.claim("listened", now=NOW) and node.claim("detached", detached=True, now=NOW)
    node.release("listened", detached=False)
    node.release("detached", detached=True)
    listened, detached = store.analysis("listened"), store.analysis("detached")
    assert listened is not None and (listened.status, listened.owner) == ("pending", None)
    assert detached is not None and detached.status == "running" and detached.detached
    # a detached analysis given up is for any process that runs jobs, at once; a pending one waits for a listener
    assert node.claimable(10, now=NOW + 1.0) == ["detached"]


def test_a_finished_stream_replaces_its_event_rows_and_clears_the_claim(store: Store) -> None:
    store.create_analysis(AnalysisRecord(id="a1", text=TEXT))
    (node,) = logs(store, "node")
    assert node.claim("a1", now=NOW)
    node.append("a1", 0, [event("analysis", id="a1", language="en")])
    store.save_result("a1", [event("analysis", id="a1", language="en"), event("done", elapsed_ms=1.0)])
    record = store.analysis("a1")
    assert record is not None and (record.status, record.owner, record.lease_until) == ("complete", None, None)
    snapshot = node.snapshot("a1", after=0)
    assert snapshot is not None and [(n, e["type"]) for n, e in snapshot.events] == [(1, "done")]
    assert node.claimable(10, now=NOW + 100.0) == []


def test_event_keys_say_what_a_stream_holds_once() -> None:
    assert event_key(event("hit", id="h1")) != event_key(event("hit", id="h2"))
    assert event_key(event("verdict", hit_id="h1")) == event_key(event("verdict", hit_id="h1", status="neutral"))
    assert event_key(event("decision", label="flagged")) == event_key(event("decision", label="not_flagged"))
    assert event_key(event("error", stage="model", code="timeout", message="m")) != event_key(
        event("error", stage="targeting", code="timeout", message="m")
    )


async def test_a_takeover_continues_after_the_stored_events(detector: Detector, store: Store) -> None:
    """A process died after storing the first events of an analysis; the one that takes it over streams every
    event once, in order, with the dead one's events first and unchanged."""
    reference = [e async for e in Analyzer(detector, BackendRouter(None), cache=MemoryCache()).analyze(TEXT, "en")]
    assert [e.type for e in reference[:3]] == ["analysis", "hit", "hit"]

    dead = AnalysisLog(store.engine, "dead", 10.0)
    store.create_analysis(AnalysisRecord(id="a1", text=TEXT, requested_language="en"))
    assert dead.claim("a1", detached=True, now=NOW)
    head = [stored(e) for e in reference[:3]]
    head[0]["data"]["id"] = "a1"
    dead.append("a1", 0, head)  # then it died: its lease ran out long ago

    analyzer = Analyzer(detector, BackendRouter(None), cache=MemoryCache())
    runs = Runs(analyzer, store, coordination=Coordination(node="heir", lease_seconds=10.0))
    assert await runs.take_over() == 1
    run = runs.current("a1")
    assert run is not None and run.task is not None
    await asyncio.wait_for(run.task, 30)
    record = store.analysis("a1")
    assert record is not None and record.status == "complete"
    numbered = [(n, e) async for n, e in runs.events_of(record)]
    assert [n for n, _ in numbered] == list(range(len(numbered)))
    events = [e for _, e in numbered]
    assert events[:3] == head  # what the dead process stored stands, at its numbers
    kinds = [e["type"] for e in events]
    assert kinds.count("analysis") == 1 and kinds.count("hit") == 2 and kinds.count("done") == 1
    assert sorted(e["data"]["hit_id"] for e in events if e["type"] == "verdict") == ["h1", "h2"]
    await runs.shutdown()


async def test_a_run_that_lost_its_claim_stores_nothing(detector: Detector, store: Store) -> None:
    analyzer = Analyzer(detector, BackendRouter(None), cache=MemoryCache())
    store.create_analysis(AnalysisRecord(id="a1", text=TEXT, requested_language="en"))
    runs = Runs(analyzer, store, coordination=Coordination(node="stalled", lease_seconds=10.0))
    assert runs.log.claim("a1", now=1.0)  # long ago: this process stalled and its lease ran out
    successor = AnalysisLog(store.engine, "successor", 10.0)
    assert successor.claim("a1")  # so another took the analysis over and stored a first event
    successor.append("a1", 0, [event("analysis", id="a1", language="en")])
    run = runs.start("a1", TEXT, "en", "fast", claimed=True, fresh=True)
    assert run.task is not None
    await asyncio.wait_for(asyncio.gather(run.task, return_exceptions=True), 30)
    assert run.lost  # its write found the analysis held by another process
    snapshot = successor.snapshot("a1")
    assert snapshot is not None and [e["type"] for _, e in snapshot.events] == ["analysis"]
    record = store.analysis("a1")
    assert record is not None and (record.status, record.owner) == ("running", "successor")
    await runs.shutdown()


async def test_a_site_analysis_taken_over_keeps_the_sites_term_rules(detector: Detector, store: Store) -> None:
    """A widget analysis of a site that excluded a term, left by a dead process, is finished elsewhere without it."""
    excluded = next(h.term.id for h in detector.detect(TEXT, "en").hits if h.surface == "faggot")
    with Session(store.engine) as session:
        session.add(Site(key="s1", name="Forum"))
        session.commit()
        session.add(SiteTermRule(site_key="s1", term_id=excluded, rule="exclude", moderator="ana"))
        session.commit()
    record = AnalysisRecord(id="w1", text=TEXT, requested_language="en", source="widget")
    assert store.add_widget_analyses("s1", [("content-key", record)]) == set()
    assert AnalysisLog(store.engine, "dead", 10.0).claim("w1", detached=True, now=NOW)

    analyzer = Analyzer(detector, BackendRouter(None), cache=MemoryCache())
    runs = Runs(analyzer, store, coordination=Coordination(node="heir", lease_seconds=10.0))
    runs.scope_of = Widget(analyzer, runs, store, Sites(store), wait=0.0).scope_of
    assert await runs.take_over() == 1
    run = runs.current("w1")
    assert run is not None and run.task is not None
    await asyncio.wait_for(run.task, 30)
    found = await runs.lookup("w1")
    assert found is not None and found.record.status == "complete"
    assert [e["data"]["surface"] for e in found.events if e["type"] == "hit"] == ["junkie"]
    await runs.shutdown()
