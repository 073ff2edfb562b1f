"""Batch jobs: records stored first, analysed in the background, counted at the end.

Restart safety comes from the database: a job's rows are committed together with the job, and every process
that runs jobs shares them by claiming chunks of rows with leases (web/batch_worker.py, web/batch_claims.py).
A row's result is written once, only by the worker holding it; rows a dead worker held are claimed again when
its lease runs out. None is written twice and none is lost.

This module has what the routes need: uploads, progress, statistics, exports and the report's records.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fastapi import UploadFile
from starlette.concurrency import run_in_threadpool

from engine.batch import BatchLimits, BatchTooLarge, Format, Record, RowError, read_records
from engine.errors import UneraseError
from engine.result import language_of
from web.models import BatchJob, BatchRow
from web.services import Services
from web.store import Progress, Store

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
