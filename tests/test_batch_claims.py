"""The claim protocol of batch rows and jobs (web/batch_claims.py) on a real SQLite file and a real PostgreSQL
server: claims, renewals, lapsed leases, releases, writes by the current claimer only, completion once, retries.

Time is passed in (`now`, epoch seconds), so a lease passing is a number in the test, not a wait.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import event, text

from web.batch_claims import BatchClaims, RowResult
from web.models import BatchJob, BatchRow
from web.store import Store

T0 = 1_800_000_000.0  # an epoch second; every lease below is counted from it
LEASE = 15.0


def _job(store: Store, job_id: str = "j1", rows: int = 25, error_line: int | None = 5) -> list[int]:
    """A job of `rows` rows (the one on `error_line` failed when read); returns the pending rows' ids."""

    def made() -> Iterator[BatchRow]:
        for line in range(1, rows + 1):
            if line == error_line:
                yield BatchRow(job_id=job_id, line=line, record_id=str(line), status="error", error="empty text")
            else:
                yield BatchRow(job_id=job_id, line=line, record_id=f"r{line}", text=f"text of {job_id} line {line}")

    store.create_job(BatchJob(id=job_id, filename="f.csv", format="csv"), made())
    return [row.id or 0 for row in store.iter_rows(job_id) if row.status == "pending"]


def _rows(store: Store, job_id: str = "j1") -> dict[int, BatchRow]:
    return {row.id or 0: row for row in store.iter_rows(job_id)}


def _done(ids: list[int], label: str = "not_flagged") -> list[RowResult]:
    return [RowResult(i, "done", label, json.dumps({"id": i})) for i in ids]


def test_claims_take_free_pending_rows_lowest_first_and_never_one_row_twice(store: Store) -> None:
    pending = _job(store)
    _job(store, "other", rows=10)  # another job's rows are never taken
    claims = BatchClaims(store.engine)
    a = claims.claim("j1", "node-a", 10, LEASE, now=T0)
    b = claims.claim("j1", "node-b", 10, LEASE, now=T0)
    c = claims.claim("j1", "node-c", 10, LEASE, now=T0)
    assert (
        [r.id for r in a] == pending[:10] and [r.id for r in b] == pending[10:20] and [r.id for r in c] == pending[20:]
    )
    assert [r.line for r in a][:5] == [1, 2, 3, 4, 6]  # line 5 failed when it was read: never claimed
    assert claims.claim("j1", "node-d", 10, LEASE, now=T0 + 1) == []
    stored = _rows(store)
    assert {stored[i].claimed_by for i in pending[:10]} == {"node-a"}
    assert {stored[i].lease_until for i in pending} == {T0 + LEASE}
    assert all(row.claimed_by is None for row in _rows(store, "other").values())
    assert claims.pending("j1") == 24


def test_concurrent_claimers_split_a_job_without_overlap(store: Store) -> None:
    pending = _job(store, rows=400, error_line=None)
    claims = BatchClaims(store.engine)

    def take_all(owner: str) -> list[int]:
        taken: list[int] = []
        for _ in range(400):  # bounded: each round takes at least one row or ends
            rows = claims.claim("j1", owner, 7, LEASE)
            if not rows:
                break
            taken += [row.id or 0 for row in rows]
        return taken

    with ThreadPoolExecutor(max_workers=6) as pool:
        shares = list(pool.map(take_all, [f"node-{n}" for n in range(6)]))
    everything = [row_id for share in shares for row_id in share]
    assert sorted(everything) == pending  # every row once: none twice, none missed
    stored = _rows(store)
    for number, share in enumerate(shares):
        assert {stored[i].claimed_by for i in share} <= {f"node-{number}"}


def test_a_result_is_written_only_by_the_current_claimer_and_only_while_pending(store: Store) -> None:
    _job(store, rows=4, error_line=None)
    claims = BatchClaims(store.engine)
    held = [row.id or 0 for row in claims.claim("j1", "node-a", 2, LEASE, now=T0)]
    assert claims.save("node-b", _done(held, "flagged")) == 0  # not the claimer
    # node-a stalls past its lease; node-b takes the rows over, so node-a's late results are refused
    assert [row.id for row in claims.claim("j1", "node-b", 2, LEASE, now=T0 + LEASE + 1)] == held
    assert claims.save("node-a", _done(held, "flagged")) == 0
    assert claims.save("node-b", _done(held)) == 2
    assert claims.save("node-b", _done(held, "flagged")) == 0  # written once: no longer pending
    stored = _rows(store)
    assert [(stored[i].status, stored[i].label, stored[i].claimed_by) for i in held] == [
        ("done", "not_flagged", "node-b")
    ] * 2
    assert all(stored[i].lease_until is None for i in held)  # a written row holds no lease


def test_renewing_keeps_a_live_workers_rows_and_a_lapsed_lease_is_claimed_again(store: Store) -> None:
    _job(store, rows=60, error_line=None)
    claims = BatchClaims(store.engine)
    held = [row.id or 0 for row in claims.claim("j1", "node-a", 50, LEASE, now=T0)]
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        assert claims.renew("node-a", held, LEASE, now=T0 + 10) == 50
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    assert len(statements) == 1  # one statement for all the rows a worker holds, not one per row
    assert [row.id for row in claims.claim("j1", "node-b", 60, LEASE, now=T0 + 20)] == list(
        range(held[-1] + 1, held[-1] + 11)
    )  # renewed until T0 + 25: only the ten free rows
    # node-a dies and renews no more: after T0 + 25 its rows are free again
    taken = claims.claim("j1", "node-c", 60, LEASE, now=T0 + 26)
    assert [row.id for row in taken] == held
    assert claims.renew("node-a", held, LEASE, now=T0 + 27) == 0  # no longer node-a's: nothing is renewed
    assert {_rows(store)[i].lease_until for i in held} == {T0 + 26 + LEASE}


def test_released_rows_are_free_at_once_and_only_the_holder_releases(store: Store) -> None:
    _job(store, rows=5, error_line=None)
    claims = BatchClaims(store.engine)
    held = [row.id or 0 for row in claims.claim("j1", "node-a", 5, LEASE, now=T0)]
    assert claims.save("node-a", _done(held[:2])) == 2
    assert claims.release("node-b", held) == 0
    assert claims.release("node-a", held) == 3  # the written two are not pending: untouched
    assert [row.id for row in claims.claim("j1", "node-b", 5, LEASE, now=T0 + 1)] == held[2:]
    assert {_rows(store)[i].claimed_by for i in held[:2]} == {"node-a"}


def test_a_job_is_completed_once_and_only_when_no_row_is_pending(store: Store) -> None:
    pending = _job(store, rows=6)
    claims = BatchClaims(store.engine)
    claims.start("j1")
    assert store.job("j1").status == "running"  # type: ignore[union-attr]
    first = [row.id or 0 for row in claims.claim("j1", "node-a", 3, LEASE, now=T0)]
    second = [row.id or 0 for row in claims.claim("j1", "node-b", 3, LEASE, now=T0)]
    claims.save("node-a", _done(first))
    assert not claims.claim_completion("j1", "node-a", LEASE, now=T0 + 1)  # node-b's rows are still pending
    claims.save("node-b", _done(second))
    assert sorted(first + second) == pending
    assert claims.claim_completion("j1", "node-b", LEASE, now=T0 + 2)
    assert not claims.claim_completion("j1", "node-a", LEASE, now=T0 + 3)  # node-b is counting
    assert not claims.complete("j1", "node-a", {"errors": 1})  # only the holder completes
    assert claims.complete("j1", "node-b", {"errors": 1})
    job = store.job("j1")
    assert job is not None and job.status == "complete" and json.loads(job.stats or "") == {"errors": 1}
    assert job.finished_at is not None and job.claimed_by is None
    assert not claims.claim_completion("j1", "node-a", LEASE, now=T0 + 100)  # complete: nothing left to claim
    claims.start("j1")
    assert store.job("j1").status == "complete"  # type: ignore[union-attr]  # a late start does not reopen it


def test_a_worker_dying_while_counting_leaves_the_job_to_another(store: Store) -> None:
    _job(store, rows=3, error_line=None)
    claims = BatchClaims(store.engine)
    held = [row.id or 0 for row in claims.claim("j1", "node-a", 3, LEASE, now=T0)]
    claims.save("node-a", _done(held))
    assert claims.claim_completion("j1", "node-a", LEASE, now=T0)
    assert claims.renew_completion("j1", "node-a", LEASE, now=T0 + 5)  # counting a large job takes a while
    assert not claims.claim_completion("j1", "node-b", LEASE, now=T0 + 19)
    # node-a dies while counting: its claim lapses at T0 + 20 and node-b counts instead
    assert claims.claim_completion("j1", "node-b", LEASE, now=T0 + 21)
    assert not claims.renew_completion("j1", "node-a", LEASE, now=T0 + 22)
    assert not claims.complete("j1", "node-a", {"n": "a"})
    assert claims.complete("j1", "node-b", {"n": "b"})
    assert json.loads(store.job("j1").stats or "") == {"n": "b"}  # type: ignore[union-attr]


def test_a_released_count_is_taken_at_once(store: Store) -> None:
    _job(store, rows=1, error_line=None)
    claims = BatchClaims(store.engine)
    claims.save("node-a", _done([row.id or 0 for row in claims.claim("j1", "node-a", 1, LEASE, now=T0)]))
    assert claims.claim_completion("j1", "node-a", LEASE, now=T0)
    claims.release_completion("j1", "node-a")  # stopping mid-count
    assert claims.claim_completion("j1", "node-b", LEASE, now=T0 + 1)


def test_retried_rows_are_unclaimed_and_the_job_is_completed_again(store: Store) -> None:
    _job(store, rows=4, error_line=None)
    claims = BatchClaims(store.engine)
    held = [row.id or 0 for row in claims.claim("j1", "node-a", 4, 3600.0)]
    failed = [RowResult(i, "error", error="language not detected") for i in held[:2]]
    claims.save("node-a", [*failed, *_done(held[2:])])
    assert claims.claim_completion("j1", "node-a", 3600.0) and claims.complete("j1", "node-a", {"errors": 2})
    assert store.retry_rows("j1", "en") == 2
    job = store.job("j1")
    assert job is not None and (job.status, job.stats, job.claimed_by, job.finished_at) == ("queued", None, None, None)
    stored = _rows(store)
    assert [(stored[i].status, stored[i].claimed_by, stored[i].lease_until) for i in held[:2]] == [
        ("pending", None, None)
    ] * 2
    # another node takes them at once: the retry cleared node-a's old claim
    again = [row.id or 0 for row in claims.claim("j1", "node-b", 4, LEASE)]
    assert again == held[:2]
    claims.save("node-b", _done(again, "flagged"))
    assert claims.claim_completion("j1", "node-b", LEASE) and claims.complete("j1", "node-b", {"errors": 0})
    assert store.progress("j1").to_dict()["analysed"] == 4  # type: ignore[union-attr]


def test_the_claim_reads_the_jobs_pending_rows_through_the_index_not_older_jobs_rows(store: Store) -> None:
    """The statement the claim really sends, explained with its parameters: a job of 20,000 rows behind four finished
    ones of 5,000, with the table's statistics, which once led PostgreSQL to read every older row first. Job ids are
    random, so the order of their rows in the table has nothing to do with the order of the ids (here "j1" comes
    between the others)."""
    for old in ("j3", "j0", "j4", "j2"):
        store.create_job(
            BatchJob(id=old, filename="f.csv", format="csv", status="complete"),
            (BatchRow(job_id=old, line=n, record_id=str(n), text="t", status="done") for n in range(5_000)),
        )
    _job(store, rows=20_000)
    claims = BatchClaims(store.engine)
    sent: list[tuple[str, Any]] = []

    def keep(connection: Any, cursor: Any, statement: str, parameters: Any, *args: Any) -> None:
        sent.append((statement, parameters))

    event.listen(store.engine, "before_cursor_execute", keep)
    try:
        assert len(claims.claim("j1", "node-a", 10, LEASE, now=T0)) == 10
    finally:
        event.remove(store.engine, "before_cursor_execute", keep)
    [(statement, parameters)] = [(s, p) for s, p in sent if "UPDATE batch_row" in s]
    with store.engine.connect() as connection:
        if store.engine.dialect.name == "postgresql":
            connection.execute(text("ANALYZE batch_row"))
            [[plan]] = connection.exec_driver_sql("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, parameters).all()
            connection.rollback()  # EXPLAIN ANALYZE ran the claim: undo it
            scans = [node for node in _nodes(plan[0]["Plan"]) if node.get("Relation Name") == "batch_row"]
            picking = [node for node in scans if node.get("Index Name") == "ix_batch_row_job_status_id"]
            assert len(picking) == 1, scans
            # it reads the ten rows after the ten node-a holds, not the older job's 20,000
            assert picking[0]["Actual Rows"] + picking[0].get("Rows Removed by Filter", 0) <= 20, picking
        else:
            plan = [row[-1] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)]
            assert any("USING INDEX ix_batch_row_job_status_id" in line for line in plan), plan
            assert not any(line.startswith("SCAN batch_row") for line in plan), plan


def _nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield node
    for child in node.get("Plans", []):
        yield from _nodes(child)
