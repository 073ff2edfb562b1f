"""Reading and writing the stored records. `Store` blocks (SQLAlchemy), so routes call it in a thread;
`GroupWriter` stores finished analyses for async callers, many per transaction."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import bindparam, delete, func, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool

from engine.result import StoredEvent, fold
from web.analysis_log import LostClaim
from web.models import (
    AnalysisEvent,
    AnalysisRecord,
    BatchJob,
    BatchRow,
    DecisionRecord,
    HitRecord,
    ModeratorDecision,
    VerdictRecord,
    WidgetResult,
    utcnow,
)
from web.signals import analysis_signal, send


@dataclass(frozen=True)
class Progress:
    total: int
    done: int
    errors: int
    status: str

    @property
    def processed(self) -> int:
        return self.done + self.errors

    @property
    def percent(self) -> int:
        return 100 if self.total == 0 else int(100 * self.processed / self.total)

    def to_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "total": self.total,
            "processed": self.processed,
            "analysed": self.done,
            "errors": self.errors,
            "percent": self.percent,
        }


@dataclass(frozen=True)
class Finished:
    """A finished analysis to store: its event stream, and its record if it was never stored pending."""

    analysis_id: str
    events: Sequence[StoredEvent]
    new: AnalysisRecord | None = None
    # the process that claimed it: stored only while that process still holds it (web/analysis_log.py)
    owner: str | None = None


class Store:
    def __init__(self, engine: Engine, spot_check_percent: float = 0.0) -> None:
        self.engine = engine
        self.spot_check_rate = spot_check_percent / 100

    def _session(self) -> Session:
        # records leave the session (they go to templates and JSON), so they must not expire on commit
        return Session(self.engine, expire_on_commit=False)

    # -- analyses -----------------------------------------------------------------------
    def create_analysis(self, record: AnalysisRecord) -> None:
        with self._session() as session:
            session.add(record)
            session.commit()

    def analysis(self, analysis_id: str) -> AnalysisRecord | None:
        with self._session() as session:
            return session.get(AnalysisRecord, analysis_id)

    def set_status(self, analysis_id: str, status: str, only_if: str | None = None) -> None:
        with self._session() as session:
            query = update(AnalysisRecord).where(col(AnalysisRecord.id) == analysis_id)
            if only_if is not None:
                query = query.where(col(AnalysisRecord.status) == only_if)
            session.execute(query.values(status=status))
            session.commit()

    def save_result(self, analysis_id: str, events: Sequence[StoredEvent], new: AnalysisRecord | None = None) -> None:
        """The finished stream, and its hits, verdicts and decision as rows, in one transaction.
        Saving twice replaces, never duplicates."""
        self.save_many([Finished(analysis_id, events, new)])

    def save_new(self, record: AnalysisRecord, events: Sequence[StoredEvent]) -> None:
        """A finished analysis that was never stored pending (the synchronous API): one transaction."""
        self.save_result(record.id, events, new=record)

    def save_many(self, items: Sequence[Finished]) -> None:
        """Several finished analyses in one transaction: all are stored or none.

        Written with bulk Core statements (one executemany per table for the whole batch, not ORM
        objects): storing is a large share of a request's cost, and most of it is paid per statement
        and per commit, not per row.
        """
        fresh: list[dict[str, Any]] = []
        updated: list[dict[str, Any]] = []
        fenced: list[dict[str, Any]] = []  # stored only if their owner still holds them
        children: dict[type, list[dict[str, Any]]] = {HitRecord: [], VerdictRecord: [], DecisionRecord: []}
        for item in items:
            result = self._result_values(item, children)
            if item.new is not None:
                fresh.append({**item.new.model_dump(), **result})
            else:
                values = {"analysis_key": item.analysis_id, **{f"new_{k}": v for k, v in result.items()}}
                (fenced if item.owner is not None else updated).append({**values, "expected_owner": item.owner})
        analyses = AnalysisRecord.__table__  # type: ignore[attr-defined]
        with self.engine.begin() as connection:
            if fresh:
                connection.execute(analyses.insert(), fresh)
            for group in (updated, fenced):
                if not group:
                    continue
                keys: dict[str, Any] = {
                    key.removeprefix("new_"): bindparam(key) for key in group[0] if key.startswith("new_")
                }
                query = update(analyses).where(analyses.c.id == bindparam("analysis_key"))
                if group is fenced:
                    query = query.where(analyses.c.owner == bindparam("expected_owner"))
                changed = connection.execute(query.values(keys), group).rowcount
                if group is fenced and changed != len(group):
                    # rolled back whole; GroupWriter then stores its analyses one by one, so only the lost one fails
                    raise LostClaim(
                        f"{len(group) - changed} of {len(group)} analyses were taken over by another process"
                    )
            updated += fenced
            replaced = [{"analysis_key": row["analysis_key"]} for row in updated]
            for model, rows in children.items():
                table = model.__table__  # type: ignore[attr-defined]
                if updated:
                    # a result saved again (a rerun) replaces its rows
                    connection.execute(delete(table).where(table.c.analysis_id == bindparam("analysis_key")), replaced)
                if rows:
                    connection.execute(table.insert(), rows)
            if updated:
                # the stream is whole in the analysis row now: the events stored one by one while it ran go
                events = AnalysisEvent.__table__  # type: ignore[attr-defined]
                connection.execute(delete(events).where(events.c.analysis_id == bindparam("analysis_key")), replaced)
                send(connection, *(analysis_signal(row["analysis_key"]) for row in updated))

    def _result_values(self, item: Finished, children: dict[type, list[dict[str, Any]]]) -> dict[str, Any]:
        """The analysis row's result columns; its hit, verdict and decision rows are added to `children`."""
        analysis_id, result = item.analysis_id, fold(item.events)
        for hit in result["hits"]:
            children[HitRecord].append(
                {
                    "analysis_id": analysis_id,
                    "hit_id": hit["id"],
                    "start": hit["start"],
                    "end": hit["end"],
                    "surface": hit["surface"],
                    "term": hit["term"],
                    "term_id": hit["term_id"],
                    "issue_id": hit["issue_id"],
                    "categories": ",".join(hit["categories"]),
                    "ambiguous": hit["ambiguous"],
                    "obfuscated": hit["obfuscated"],
                }
            )
            if (verdict := hit["verdict"]) is not None:
                children[VerdictRecord].append(
                    {
                        "analysis_id": analysis_id,
                        "hit_id": verdict["hit_id"],
                        "status": verdict["status"],
                        "confidence": verdict["confidence"],
                        "decided_by": verdict["decided_by"],
                        "explanation": verdict["explanation"],
                    }
                )
        decision = result["decision"]
        if decision is not None:
            children[DecisionRecord].append(
                {
                    "analysis_id": analysis_id,
                    "label": decision["label"],
                    "severity": decision["severity"],
                    "confidence": decision["confidence"],
                    "categories": ",".join(decision["categories"]),
                    "reasons": json.dumps(decision["reasons"], ensure_ascii=False),
                    "proposed_label": decision.get("proposed_label"),
                }
            )
        decided = decision is not None and decision["label"] != "needs_review"
        return {
            # drawn once, when the decision is stored: a sample of automatic decisions for moderators to check
            "spot_check": decided and random.random() < self.spot_check_rate,
            "status": "complete",
            "events": orjson.dumps(item.events).decode(),  # the standard encoder took several times longer
            "language": result["language"],
            "elapsed_ms": result.get("elapsed_ms"),
            # finished: nobody holds it any more (web/analysis_log.py)
            "owner": None,
            "lease_until": None,
        }

    # -- the widget's posts ---------------------------------------------------------------
    def widget_analyses(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored analysis of each content key that has one (web.widget.content_key)."""
        with self._session() as session:
            rows = session.exec(select(WidgetResult).where(col(WidgetResult.cache_key).in_(list(keys))))
            return {row.cache_key: row.analysis_id for row in rows}

    def add_widget_analyses(self, site_key: str, new: Sequence[tuple[str, AnalysisRecord]]) -> set[str]:
        """Stores the new analyses with their content keys; returns the keys another request stored first.

        Two readers opening the same new post at once both find it unknown and both try to store it: the
        database keeps the first, and the other's record is dropped with its key, so it reads the first one's
        answer back instead of failing or analysing the post a second time. All keys go in one transaction;
        only when that one is refused are they stored one at a time, to learn which were taken."""
        if not new:
            return set()
        try:
            self._insert_widget_analyses(site_key, new)
            return set()
        except IntegrityError:
            pass
        taken = set()
        for key, record in new:
            try:
                self._insert_widget_analyses(site_key, [(key, record)])
            except IntegrityError:
                taken.add(key)
        return taken

    def _insert_widget_analyses(self, site_key: str, new: Sequence[tuple[str, AnalysisRecord]]) -> None:
        with self._session() as session:
            for key, record in new:
                session.add(record)
                session.flush()
                session.add(WidgetResult(cache_key=key, site_key=site_key, analysis_id=record.id))
            session.commit()

    def widget_site(self, analysis_id: str) -> str | None:
        """The site whose widget made this analysis, if one did."""
        with self._session() as session:
            query = select(WidgetResult.site_key).where(WidgetResult.analysis_id == analysis_id)
            return session.exec(query.limit(1)).first()

    def widget_made(self, site_key: str, analysis_id: str) -> bool:
        """Whether the site's widget made (and stored) this analysis."""
        with self._session() as session:
            query = select(WidgetResult.cache_key).where(
                WidgetResult.analysis_id == analysis_id, WidgetResult.site_key == site_key
            )
            return session.exec(query.limit(1)).first() is not None

    def latest_decisions(self, analysis_ids: Iterable[str]) -> dict[str, ModeratorDecision]:
        """The newest moderator decision of each analysis that has one."""
        ids = list(set(analysis_ids))
        if not ids:
            return {}
        with self._session() as session:
            rows = session.exec(
                select(ModeratorDecision)
                .where(col(ModeratorDecision.analysis_id).in_(ids))
                .order_by(col(ModeratorDecision.created_at), col(ModeratorDecision.id))
            )
            return {row.analysis_id: row for row in rows}  # later rows replace earlier ones

    # -- batch jobs ---------------------------------------------------------------------
    def create_job(self, job: BatchJob, rows: Iterable[BatchRow], chunk: int = 2_000) -> int:
        """The job and all its rows, committed together: a job is either fully queued or absent."""
        total = 0
        with self._session() as session:
            session.add(job)
            session.flush()
            batch: list[dict[str, Any]] = []
            for row in rows:
                batch.append(row.model_dump(exclude={"id"}))
                total += 1
                if len(batch) >= chunk:
                    session.execute(BatchRow.__table__.insert(), batch)  # type: ignore[attr-defined]
                    batch = []
            if batch:
                session.execute(BatchRow.__table__.insert(), batch)  # type: ignore[attr-defined]
            job.total_rows = total
            session.add(job)
            session.commit()
        return total

    def job(self, job_id: str) -> BatchJob | None:
        with self._session() as session:
            return session.get(BatchJob, job_id)

    def unfinished_jobs(self) -> list[str]:
        with self._session() as session:
            rows = session.exec(
                select(BatchJob.id).where(col(BatchJob.status) != "complete").order_by(col(BatchJob.created_at))
            )
            return list(rows)

    def set_job_status(self, job_id: str, status: str, stats: dict[str, Any] | None = None) -> None:
        with self._session() as session:
            values: dict[str, Any] = {"status": status}
            if status == "complete":
                values["finished_at"] = utcnow()
            if stats is not None:
                values["stats"] = json.dumps(stats, ensure_ascii=False)
            session.execute(update(BatchJob).where(col(BatchJob.id) == job_id).values(**values))
            session.commit()

    def progress(self, job_id: str) -> Progress | None:
        with self._session() as session:
            job = session.get(BatchJob, job_id)
            if job is None:
                return None
            counts = dict(
                session.execute(
                    select(BatchRow.status, func.count())
                    .where(BatchRow.job_id == job_id)
                    .group_by(col(BatchRow.status))
                ).all()
            )
        return Progress(job.total_rows, int(counts.get("done", 0)), int(counts.get("error", 0)), job.status)

    def iter_rows(self, job_id: str, chunk: int = 1_000) -> Iterator[BatchRow]:
        """Every row of a job in file order, read in chunks so a large job never sits in memory."""
        last = -1
        while True:
            with self._session() as session:
                rows = list(
                    session.exec(
                        select(BatchRow)
                        .where(BatchRow.job_id == job_id, col(BatchRow.id) > last)
                        .order_by(col(BatchRow.id))
                        .limit(chunk)
                    )
                )
            if not rows:
                return
            yield from rows
            last = rows[-1].id or last

    def retry_rows(self, job_id: str, language: str) -> int:
        """Failed rows that have a text go back to pending in `language`, unclaimed, and the job back to queued, in
        one transaction (any worker then claims them and counts the job afresh). Returns how many rows."""
        table = BatchRow.__table__  # type: ignore[attr-defined]
        with self.engine.begin() as connection:
            count = connection.execute(
                update(table)
                .where(table.c.job_id == job_id, table.c.status == "error", table.c.text != "")
                .values(
                    status="pending",
                    language=language,
                    error=None,
                    label=None,
                    result=None,
                    claimed_by=None,
                    lease_until=None,
                )
            ).rowcount
            if count:
                connection.execute(
                    update(BatchJob.__table__)  # type: ignore[attr-defined]
                    .where(BatchJob.__table__.c.id == job_id)  # type: ignore[attr-defined]
                    .values(status="queued", stats=None, finished_at=None, claimed_by=None, lease_until=None)
                )
        return int(count or 0)

    def retryable_rows(self, job_id: str) -> int:
        """How many of the job's failed rows have a text, so that analysing them again could help."""
        with self._session() as session:
            count = session.execute(
                select(func.count())
                .select_from(BatchRow)
                .where(BatchRow.job_id == job_id, BatchRow.status == "error", BatchRow.text != "")
            ).scalar_one()
        return int(count)

    def row_errors(self, job_id: str, limit: int = 200) -> list[BatchRow]:
        with self._session() as session:
            return list(
                session.exec(
                    select(BatchRow)
                    .where(BatchRow.job_id == job_id, BatchRow.status == "error")
                    .order_by(col(BatchRow.line))
                    .limit(limit)
                )
            )


class GroupWriter:
    """Group commit: finished analyses from concurrent requests are stored together, one transaction per batch.

    Each caller awaits the commit of the batch its analysis went into, so "answered" still means
    "stored" and a result is readable at once from every worker process. While one batch is being
    written (in the writer's own thread: SQLite and the driver block), the analyses finished
    meanwhile queue up and go into the next one: under load a commit serves many requests, and a
    lone request waits for nothing but its own. A batch the database refuses is written again one
    analysis at a time, so only the analysis at fault fails, and its caller gets the error.
    """

    def __init__(self, store: Store, max_batch: int = 256) -> None:
        self.store = store
        self.max_batch = max_batch
        self.commits = 0  # transactions written (the tests read it)
        self._queue: list[tuple[Finished, asyncio.Future[None]]] = []
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        # one thread: batches are written one after another, each while the next one fills
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="unerase-writer")

    async def save(self, item: Finished) -> None:
        """Returns once `item` is committed; raises what the database raised for it."""
        if self._closed:
            # after shutdown (a request finishing late) the result is still stored, just alone
            await run_in_threadpool(self.store.save_many, [item])
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._queue.append((item, future))
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="unerase-writer")
        self._wake.set()
        # shielded: a caller that goes away (a client hanging up) does not take its analysis out of the batch
        await asyncio.shield(future)

    async def close(self) -> None:
        """Writes everything queued, then stops; later saves are written one at a time."""
        self._closed = True
        if self._task is not None:
            self._wake.set()
            await asyncio.gather(self._task, return_exceptions=True)
        self._thread.shutdown(wait=True)

    async def _run(self) -> None:
        batch: list[tuple[Finished, asyncio.Future[None]]] = []
        try:
            while self._queue or not self._closed:
                if not self._queue:
                    self._wake.clear()
                    await self._wake.wait()
                    continue
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                await self._write(batch)
        finally:
            # only left early if the task itself is cancelled: no caller may wait forever
            for _, future in [*batch, *self._queue]:
                if not future.done():
                    future.set_exception(RuntimeError("the result writer stopped before storing this analysis"))

    async def _write(self, batch: list[tuple[Finished, asyncio.Future[None]]]) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._thread, self.store.save_many, [item for item, _ in batch])
            self.commits += 1
            outcomes: list[BaseException | None] = [None] * len(batch)
        except Exception as exc:
            if len(batch) == 1:
                outcomes = [exc]
            else:
                outcomes = []
                for item, _ in batch:
                    try:
                        await loop.run_in_executor(self._thread, self.store.save_many, [item])
                        self.commits += 1
                        outcomes.append(None)
                    except Exception as alone:
                        outcomes.append(alone)
        for (_, future), outcome in zip(batch, outcomes, strict=True):
            if future.done():
                continue
            if outcome is None:
                future.set_result(None)
            else:
                future.set_exception(outcome)
