"""Reading and writing the stored records. Blocking (SQLAlchemy), so routes call it in a thread."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, delete, func, update
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from web.models import (
    AnalysisRecord,
    BatchJob,
    BatchRow,
    DecisionRecord,
    HitRecord,
    VerdictRecord,
    utcnow,
)

StoredEvent = dict[str, Any]  # {"type": "hit", "data": {...}}


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

        Written with bulk Core statements (not ORM objects): this runs once per analysis and its cost
        is a large share of a request's. Saving twice replaces, never duplicates.
        """
        first: dict[str, Any] = next((e["data"] for e in events if e["type"] == "analysis"), {})
        done: dict[str, Any] = next((e["data"] for e in events if e["type"] == "done"), {})
        hits, verdicts, decisions = [], [], []
        for kind, data in ((e["type"], e["data"]) for e in events):
            if kind == "hit":
                hits.append(
                    {
                        "analysis_id": analysis_id,
                        "hit_id": data["id"],
                        "start": data["start"],
                        "end": data["end"],
                        "surface": data["surface"],
                        "term": data["term"],
                        "term_id": data["term_id"],
                        "issue_id": data["issue_id"],
                        "categories": ",".join(data["categories"]),
                        "ambiguous": data["ambiguous"],
                        "obfuscated": data["obfuscated"],
                    }
                )
            elif kind == "verdict":
                verdicts.append(
                    {
                        "analysis_id": analysis_id,
                        "hit_id": data["hit_id"],
                        "status": data["status"],
                        "confidence": data["confidence"],
                        "decided_by": data["decided_by"],
                        "explanation": data["explanation"],
                    }
                )
            elif kind == "decision":
                decisions.append(
                    {
                        "analysis_id": analysis_id,
                        "label": data["label"],
                        "severity": data["severity"],
                        "confidence": data["confidence"],
                        "categories": ",".join(data["categories"]),
                        "reasons": json.dumps(data["reasons"], ensure_ascii=False),
                        "proposed_label": data.get("proposed_label"),
                    }
                )
        analyses = AnalysisRecord.__table__  # type: ignore[attr-defined]
        decided = any(d["label"] != "needs_review" for d in decisions)
        result = {
            # drawn once, when the decision is stored: a sample of automatic decisions for moderators to check
            "spot_check": decided and random.random() < self.spot_check_rate,
            "status": "complete",
            "events": json.dumps(events, ensure_ascii=False),
            "language": first.get("language"),
            "elapsed_ms": done.get("elapsed_ms"),
        }
        with self.engine.begin() as connection:
            if new is not None:
                connection.execute(analyses.insert().values({**new.model_dump(), **result}))
            else:
                connection.execute(update(analyses).where(analyses.c.id == analysis_id).values(result))
            for model, rows in ((HitRecord, hits), (VerdictRecord, verdicts), (DecisionRecord, decisions)):
                table = model.__table__  # type: ignore[union-attr]
                if new is None:
                    connection.execute(delete(table).where(table.c.analysis_id == analysis_id))
                if rows:
                    connection.execute(table.insert(), rows)

    def save_new(self, record: AnalysisRecord, events: Sequence[StoredEvent]) -> None:
        """A finished analysis that was never stored pending (the synchronous API): one transaction."""
        self.save_result(record.id, events, new=record)

    def reset_unfinished_analyses(self) -> int:
        """After a restart nothing is running: unfinished analyses go back to pending (they rerun on request)."""
        with self._session() as session:
            result = session.execute(
                update(AnalysisRecord).where(col(AnalysisRecord.status) == "running").values(status="pending")
            )
            session.commit()
            return int(result.rowcount or 0)  # type: ignore[attr-defined]

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

    def pending_rows(self, job_id: str, after_id: int, limit: int) -> list[BatchRow]:
        with self._session() as session:
            rows = session.exec(
                select(BatchRow)
                .where(BatchRow.job_id == job_id, BatchRow.status == "pending", col(BatchRow.id) > after_id)
                .order_by(col(BatchRow.id))
                .limit(limit)
            )
            return list(rows)

    def save_rows(self, results: Sequence[tuple[int, str, str | None, str | None, str | None]]) -> None:
        """(row id, status, label, result JSON, error); a row is written once, only while still pending."""
        if not results:
            return
        table = BatchRow.__table__  # type: ignore[attr-defined]
        statement = (
            update(table)
            .where(table.c.id == bindparam("row_id"), table.c.status == "pending")
            .values(status=bindparam("new_status"), label=bindparam("new_label"),
                    result=bindparam("new_result"), error=bindparam("new_error"))
        )  # fmt: skip
        rows = [
            {"row_id": i, "new_status": s, "new_label": label, "new_result": r, "new_error": e}
            for i, s, label, r, e in results
        ]
        with self.engine.begin() as connection:
            connection.execute(statement, rows)  # one executemany

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
