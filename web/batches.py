"""Batch jobs: records stored first, analysed in the background, counted at the end.

Restart safety comes from the database: a job's rows are committed together with the job, each
row's result is written once (only while the row is still pending), and a worker that starts
takes up every unfinished job where it stopped. Rows analysed but not yet written when the
process died are analysed again; none is written twice and none is lost.

One worker per data directory processes jobs (a lock file decides which process, so two uvicorn
workers never analyse the same rows); if that process exits, another takes over.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import IO, Any

from fastapi import UploadFile
from starlette.concurrency import run_in_threadpool

from engine.batch import BatchLimits, BatchTooLarge, Format, Record, RowError, read_records
from engine.batch_language import analyse_record, noted
from engine.errors import UneraseError
from engine.result import language_of, summary
from web.models import BatchJob, BatchRow
from web.services import Services
from web.store import Progress, Store

log = logging.getLogger("unerase.batches")
CHUNK = 200
LOCK_RETRY_SECONDS = 5.0
PROGRESS_SECONDS = 0.5  # how often a progress stream reads the job's counts
UPLOAD_CHUNK = 1 << 20


async def read_upload(upload: UploadFile, limit: int) -> bytes:
    """The whole upload, refusing it as soon as it passes the limit (never more than limit+1 MB in memory)."""
    chunks, size = [], 0
    while chunk := await upload.read(UPLOAD_CHUNK):
        size += len(chunk)
        if size > limit:
            raise BatchTooLarge(f"the upload is larger than {limit:,} bytes, the most accepted; split the file")
        chunks.append(chunk)
    return b"".join(chunks)


def limits(services: Services) -> BatchLimits:
    settings = services.settings
    return BatchLimits(
        max_bytes=settings.max_upload_bytes, max_rows=settings.max_batch_rows, max_text_chars=settings.max_text_chars
    )


def rows_of(job_id: str, items: Iterable[Record | RowError], language: str | None = None) -> Iterator[BatchRow]:
    """The rows to store; a record without a language of its own gets the job's `language` (None: detected)."""
    for item in items:
        if isinstance(item, RowError):
            yield BatchRow(
                job_id=job_id, line=item.line, record_id=item.id or str(item.line), status="error", error=item.message
            )
        else:
            lang = item.lang or language
            yield BatchRow(job_id=job_id, line=item.line, record_id=item.id, text=item.text, language=lang)


def check_language(services: Services, language: str | None, what: str = "language") -> str | None:
    """The language if it is loaded ("" and None: none given); otherwise an error naming the loaded ones."""
    if not language:
        return None
    loaded = services.detector.languages
    if language not in loaded:
        raise UneraseError(f"{what} '{language}' is not loaded; accepted: {', '.join(loaded)}")
    return language


def fallback_language(services: Services) -> str | None:
    """The deployment's language for records whose language cannot be detected, if it is loaded."""
    wanted = services.settings.batch_fallback_language
    return wanted if wanted in services.detector.languages else None


def create_job(
    services: Services,
    data: bytes,
    filename: str,
    fmt: Format,
    mode: str,
    text_column: str | None = None,
    id_column: str | None = None,
    lang_column: str | None = None,
    language: str | None = None,
) -> BatchJob:
    """Blocking. Whole-file errors raise when reading starts, before anything is stored; the records
    then stream into the database in chunks, so a large file never sits in memory as objects.

    `language` is that of records that give none (None: detected, and the deployment's fallback language
    when detection cannot tell)."""
    language = check_language(services, language)
    items = read_records(
        data, fmt, text_column=text_column, id_column=id_column, lang_column=lang_column, limits=limits(services)
    )
    job = BatchJob(
        id=uuid.uuid4().hex,
        filename=filename[:200],
        format=fmt,
        mode=mode,
        language=language,
        fallback_language=fallback_language(services),
    )
    services.store.create_job(job, rows_of(job.id, items, language))
    return job


def retry_failed(services: Services, job_id: str, language: str) -> int:
    """Blocking. Puts the job's rows whose analysis failed back in the queue, in `language`; rows that
    were never readable (an empty text, a bad line) stay as they are. Returns how many were queued."""
    checked = check_language(services, language)
    if checked is None:
        raise UneraseError("choose the language to analyse the failed rows in")
    return services.store.retry_rows(job_id, checked)


async def progress_until_complete(services: Services, job_id: str) -> AsyncIterator[Progress]:
    """The job's progress every PROGRESS_SECONDS until it is complete (read from the database, so it works
    whichever process runs the job); the client going away ends it."""
    while True:
        progress = await run_in_threadpool(services.store.progress, job_id)
        if progress is None:
            return
        yield progress
        if progress.status == "complete":
            return
        await asyncio.sleep(PROGRESS_SECONDS)


def statistics(store: Store, job_id: str) -> dict[str, Any]:
    """Counts per term, category, language, decision and severity over a job's results."""
    terms: Counter[str] = Counter()
    categories: Counter[str] = Counter()
    languages: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    severities: Counter[str] = Counter()
    errors = 0
    fallbacks = 0
    for row in store.iter_rows(job_id):
        if row.status == "error" or not row.result:
            errors += 1
            continue
        result = json.loads(row.result)
        languages[language_of(result) or "?"] += 1
        fallbacks += "language_fallback" in result
        decision = result.get("decision") or {}
        labels[decision.get("label", "none")] += 1
        severities[decision.get("severity", "none")] += 1
        for hit in result.get("hits", []):
            verdict = hit.get("verdict") or {}
            if verdict.get("status") == "neutral":
                continue  # a neutral use is not a finding
            terms[hit["term"]] += 1
            categories.update(hit.get("categories", []))
    return {
        "terms": terms.most_common(),
        "categories": categories.most_common(),
        "languages": languages.most_common(),
        "decisions": labels.most_common(),
        "severities": severities.most_common(),
        "errors": errors,
        "language_fallbacks": fallbacks,
    }


def export(store: Store, job_id: str) -> Iterator[dict[str, Any]]:
    """Every row's result (or its error) in file order, for the JSONL and CSV downloads."""
    for row in store.iter_rows(job_id):
        yield exported(row)


def exported(row: BatchRow) -> dict[str, Any]:
    if row.result:
        return {"line": row.line, **json.loads(row.result)}
    return {"id": row.record_id, "line": row.line, "error": row.error or "not analysed yet"}


# what a record is in the report's table and the subset downloads: its decision's label, or "failed"
SUBSETS = ("flagged", "needs_review", "not_flagged", "failed")
FLAGGED_OR_DEFERRED = ("flagged", "needs_review")


@dataclass(frozen=True)
class RecordFilter:
    """Which records the report lists and a download holds; empty fields select everything."""

    labels: tuple[str, ...] = ()
    term: str | None = None
    category: str | None = None

    @classmethod
    def parse(cls, label: str | None, term: str | None, category: str | None) -> RecordFilter:
        labels = tuple(part for part in (label or "").split(",") if part)
        unknown = [part for part in labels if part not in SUBSETS]
        if unknown:
            raise UneraseError(f"label '{unknown[0]}' is not known; accepted: {', '.join(SUBSETS)} (comma-separated)")
        return cls(labels, term or None, category or None)

    def query(self) -> dict[str, str]:
        values = {"label": ",".join(self.labels), "term": self.term, "category": self.category}
        return {name: value for name, value in values.items() if value}

    def admits(self, result: dict[str, Any]) -> bool:
        label = "failed" if "error" in result else (result.get("decision") or {}).get("label", "")
        if self.labels and label not in self.labels:
            return False
        found = [hit for hit in result.get("hits", []) if (hit.get("verdict") or {}).get("status") != "neutral"]
        if self.term and self.term not in {hit.get("term") for hit in found}:
            return False
        if self.category:
            categories = set((result.get("decision") or {}).get("categories") or ())
            categories.update(c for hit in found for c in hit.get("categories", []))
            if self.category not in categories:
                return False
        return True


@dataclass(frozen=True)
class ReportRecord:
    """One row of the report's table of records."""

    line: int
    id: str
    label: str
    text: str
    terms: tuple[str, ...]
    categories: tuple[str, ...]
    reason: str  # the error of a failed record, or how its language was assumed


def selected(store: Store, job_id: str, chosen: RecordFilter) -> Iterator[tuple[BatchRow, dict[str, Any]]]:
    """The rows the filter admits, in file order, each with its exported result."""
    for row in store.iter_rows(job_id):
        result = exported(row)
        if chosen.admits(result):
            yield row, result


def report_records(store: Store, job_id: str, chosen: RecordFilter, limit: int) -> tuple[list[ReportRecord], int]:
    """Up to `limit` records the filter admits for the report's table, and how many it admits in all."""
    shown: list[ReportRecord] = []
    total = 0
    for row, result in selected(store, job_id, chosen):
        total += 1
        if len(shown) >= limit:
            continue
        decision = result.get("decision") or {}
        hits = [hit for hit in result.get("hits", []) if (hit.get("verdict") or {}).get("status") != "neutral"]
        fallback = result.get("language_fallback")
        error = result.get("error")
        reason = (
            (error.get("message", "") if isinstance(error, dict) else str(error))
            if error
            else (f"language assumed {fallback['language']}: {fallback['reason']}" if fallback else "")
        )
        shown.append(
            ReportRecord(
                line=row.line,
                id=row.record_id,
                label="failed" if error else decision.get("label", ""),
                text=row.text,
                terms=tuple(dict.fromkeys(str(hit.get("term")) for hit in hits)),
                categories=tuple(decision.get("categories") or ()),
                reason=reason,
            )
        )
    return shown, total


class BatchWorker:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.wake = asyncio.Event()
        self._lock: IO[str] | None = None

    def _take_lock(self) -> bool:
        path = self.services.settings.data_dir / "batch-worker.lock"
        handle = path.open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock = handle  # held for the life of the process; the OS releases it if we die
        return True

    async def run(self) -> None:
        try:
            while not self._take_lock():
                await asyncio.sleep(LOCK_RETRY_SECONDS)
            while True:
                self.wake.clear()
                for job_id in await run_in_threadpool(self.services.store.unfinished_jobs):
                    await self.process(job_id)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), LOCK_RETRY_SECONDS)
        finally:
            if self._lock is not None:
                self._lock.close()

    async def process(self, job_id: str) -> None:
        store = self.services.store
        job = await run_in_threadpool(store.job, job_id)
        if job is None:
            return
        await run_in_threadpool(store.set_job_status, job_id, "running")
        slots = asyncio.Semaphore(self.services.settings.batch_concurrency)
        after = 0
        while rows := await run_in_threadpool(store.pending_rows, job_id, after, CHUNK):
            results = await asyncio.gather(
                *(self._analyse(row, job.mode, job.fallback_language, slots) for row in rows)
            )
            await run_in_threadpool(store.save_rows, results)
            after = rows[-1].id or after
        stats = await run_in_threadpool(statistics, store, job_id)
        await run_in_threadpool(store.set_job_status, job_id, "complete", stats)
        log.info("batch %s complete: %s rows", job_id, job.total_rows)

    async def _analyse(
        self, row: BatchRow, mode: str, fallback: str | None, slots: asyncio.Semaphore
    ) -> tuple[int, str, str | None, str | None, str | None]:
        assert row.id is not None
        async with slots:
            try:
                events, assumed = await analyse_record(self.services.analyzer, row.text, row.language, mode, fallback)
            except UneraseError as exc:
                return row.id, "error", None, None, exc.message
        result = noted(summary(events, row.record_id), assumed)
        label = (result.get("decision") or {}).get("label")
        return row.id, "done", label, json.dumps(result, ensure_ascii=False), None
