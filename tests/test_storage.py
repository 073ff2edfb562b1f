"""Storage on a real SQLite file and a real PostgreSQL server: the same tests, both databases."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sqlalchemy import make_url, text
from sqlalchemy.pool import NullPool
from sqlmodel import Session, select

from web.answer_cache import DatabaseCache
from web.batch_claims import BatchClaims, RowResult
from web.db import make_engine
from web.models import AnalysisRecord, BatchJob, BatchRow, DecisionRecord, HitRecord, VerdictRecord
from web.store import Store

from .postgres import database_url_or_skip, fresh_schema_url
from .support.stores import EVENTS


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'nested' / 'unerase.db'}")
    with engine.connect() as connection:
        assert connection.execute(text("PRAGMA journal_mode")).scalar_one() == "wal"
    assert (tmp_path / "nested" / "unerase.db").exists()


def test_workers_starting_together_on_a_new_database(tmp_path: Path) -> None:
    # uvicorn --workers 2 on a fresh data directory: every worker creates the tables at once
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    with ThreadPoolExecutor(6) as pool:
        engines = list(pool.map(lambda _: make_engine(url), range(6)))
    with engines[0].connect() as connection:
        tables = connection.execute(text("SELECT count(*) FROM sqlite_master WHERE type = 'table'")).scalar_one()
    assert tables >= 8
    for engine in engines:
        engine.dispose()


def test_an_analysis_is_stored_with_its_rows_and_saving_twice_replaces(store: Store) -> None:
    store.create_analysis(AnalysisRecord(id="a1", text="a faggot", requested_language="en"))
    assert store.analysis("a1").status == "pending"  # type: ignore[union-attr]
    store.save_result("a1", EVENTS)
    store.save_result("a1", EVENTS)
    record = store.analysis("a1")
    assert record is not None and record.status == "complete" and record.language == "en"
    assert json.loads(record.events) == EVENTS and record.elapsed_ms == 3.5
    with Session(store.engine) as session:
        hits = session.exec(select(HitRecord)).all()
        verdicts = session.exec(select(VerdictRecord)).all()
        decision = session.get(DecisionRecord, "a1")
    assert [(h.hit_id, h.start, h.end, h.categories) for h in hits] == [("h1", 2, 8, "sexual-orientation")]
    assert [(v.status, v.decided_by) for v in verdicts] == [("contentious", "vocabulary")]
    assert decision is not None and decision.label == "flagged" and json.loads(decision.reasons)
    assert store.analysis("missing") is None


def _rows(job_id: str, count: int) -> Iterator[BatchRow]:
    for line in range(2, count + 2):
        if line == 5:
            yield BatchRow(job_id=job_id, line=line, record_id=str(line), status="error", error="empty text")
        else:
            yield BatchRow(job_id=job_id, line=line, record_id=f"r{line}", text=f"text {line}")


def test_batch_rows_are_written_once_and_counted(store: Store) -> None:
    total = store.create_job(BatchJob(id="j1", filename="f.csv", format="csv"), _rows("j1", 2_500), chunk=1_000)
    assert total == 2_500 and store.job("j1").total_rows == 2_500  # type: ignore[union-attr]
    assert store.unfinished_jobs() == ["j1"]
    claims = BatchClaims(store.engine)
    first = claims.claim("j1", "node-a", 10, lease_seconds=60)
    assert [r.line for r in first] == [2, 3, 4, 6, 7, 8, 9, 10, 11, 12]  # line 5 is an error row
    assert claims.save("node-a", [RowResult(r.id or 0, "done", "flagged", '{"n": 1}') for r in first]) == 10
    assert claims.save("node-a", [RowResult(first[0].id or 0, "done", "not_flagged", '{"n": 2}')]) == 0
    progress = store.progress("j1")
    assert progress is not None and (progress.done, progress.errors, progress.processed) == (10, 1, 11)
    rows = list(store.iter_rows("j1", chunk=700))
    assert len(rows) == 2_500 and [r.line for r in rows[:4]] == [2, 3, 4, 5]
    assert rows[0].result == '{"n": 1}' and rows[0].label == "flagged"  # the second write was refused
    after = claims.claim("j1", "node-b", 5, lease_seconds=60)
    assert [r.line for r in after] == [13, 14, 15, 16, 17]
    assert [(r.line, r.error) for r in store.row_errors("j1")] == [(5, "empty text")]
    store.set_job_status("j1", "complete", {"terms": []})
    job = store.job("j1")
    assert job is not None and job.finished_at is not None and json.loads(job.stats or "") == {"terms": []}
    assert store.unfinished_jobs() == [] and store.progress("nope") is None


def test_the_app_closes_its_database_connections_when_it_stops(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    from .webapp import client

    url = database_url_or_skip()
    probe = create_engine(url, poolclass=NullPool)
    # The app's sessions carry a name of their own, so sessions of other test runs on the same server do not count.
    name = f"unerase-close-test-{os.getpid()}"

    def sessions() -> int:
        with probe.connect() as connection:
            query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
            return int(connection.execute(query, {"name": name}).scalar_one())

    def sessions_after_close() -> int:
        """A server process ends a moment after its client said goodbye: asked a few times, at most 5 s."""
        deadline = time.monotonic() + 5.0
        while (left := sessions()) and time.monotonic() < deadline:
            time.sleep(0.05)
        return left

    with fresh_schema_url(url) as schema:
        named = make_url(schema.url).update_query_dict({"application_name": name})
        # a rate limit: its checks use the engine for single statements, which must be closed too
        url = named.render_as_string(hide_password=False)
        with client(tmp_path, database_url=url, rate_limit_per_minute=100) as api:
            assert api.post("/api/v1/analyses", json={"text": "you cripple", "lang": "en"}).status_code == 201
            assert sessions() > 0
            services = api.app.state.services  # type: ignore[attr-defined]
            # on PostgreSQL the answer cache and the rate limits are in the database: their connections count above
            assert isinstance(services.cache, DatabaseCache) and services.shared.statements is not None
        assert sessions_after_close() == 0
    probe.dispose()
