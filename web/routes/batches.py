"""Batch jobs over the API and as pages: upload, progress (SSE), downloads, statistics report."""

from __future__ import annotations

import asyncio
import csv
import io
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from sse_starlette import ServerSentEvent
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from engine.batch import RESULT_COLUMNS, detect_format, result_row, write_jsonl
from engine.errors import UneraseError
from web.batches import (
    FLAGGED_OR_DEFERRED,
    SUBSETS,
    RecordFilter,
    create_job,
    fallback_language,
    progress_until_complete,
    read_upload,
    report_records,
    retry_failed,
    selected,
)
from web.charts import bar_chart
from web.deps import BatchWake, RateLimit, ServicesDep, TemplatesDep
from web.errors import PROBLEM_RESPONSES, NotFound
from web.models import BatchJob, iso
from web.render import in_words
from web.services import Services
from web.sse import respond
from web.store import Progress

router = APIRouter(tags=["batches"])


class BatchBusy(UneraseError):
    status = 409
    code = "batch-busy"


async def start_job(
    services: Services,
    wake: asyncio.Event,
    upload: UploadFile,
    text_column: str,
    id_column: str,
    lang_column: str,
    mode: str,
    language: str = "",
) -> BatchJob:
    data = await read_upload(upload, services.settings.max_upload_bytes)
    filename = upload.filename or "upload"
    fmt = detect_format(filename, data[:4096])
    job = await run_in_threadpool(
        create_job,
        services,
        data,
        filename,
        fmt,
        mode or services.settings.mode,
        text_column or None,
        id_column or None,
        lang_column or None,
        language or None,
    )
    wake.set()
    return job


async def load_job(services: Services, job_id: str) -> tuple[BatchJob, Progress]:
    job = await run_in_threadpool(services.store.job, job_id)
    progress = await run_in_threadpool(services.store.progress, job_id)
    if job is None or progress is None:
        raise NotFound(f"no batch job has the id '{job_id}'; ids are returned by POST /api/v1/batches")
    return job, progress


def job_document(job: BatchJob, progress: Progress, errors: list[Any]) -> dict[str, Any]:
    base = f"/api/v1/batches/{job.id}"
    return {
        "id": job.id,
        "filename": job.filename,
        "format": job.format,
        "mode": job.mode,
        "language": job.language,
        "fallback_language": job.fallback_language,
        "created_at": iso(job.created_at),
        "finished_at": iso(job.finished_at) if job.finished_at else None,
        **progress.to_dict(),
        "row_errors": [{"line": r.line, "id": r.record_id, "error": r.error} for r in errors],
        "links": {
            "self": base,
            "events": f"{base}/events",
            "results_jsonl": f"{base}/results.jsonl",
            "results_csv": f"{base}/results.csv",
            "report": f"{base}/report",
            "retry": f"{base}/retry",
            "page": f"/batches/{job.id}",
        },
    }


# -- API ---------------------------------------------------------------------------------------
@router.post("/api/v1/batches", status_code=202, dependencies=[RateLimit], responses=PROBLEM_RESPONSES)
async def create_batch(
    services: ServicesDep,
    wake: BatchWake,
    file: Annotated[UploadFile, File(description="CSV, JSONL, or a ZIP of .txt files (UTF-8)")],
    text_column: Annotated[str, Form(description="CSV: the column with the text (default: 'text')")] = "",
    id_column: Annotated[str, Form(description="CSV: an optional column with record ids")] = "",
    lang_column: Annotated[str, Form(description="CSV: an optional column with language codes")] = "",
    mode: Annotated[Literal["", "fast", "thorough"], Form()] = "",
    lang: Annotated[
        str,
        Form(
            description="Language of records that give none (default: detected; a text too short to tell "
            "is analysed in the server's batch_fallback_language and says so in `language_fallback`)"
        ),
    ] = "",
) -> JSONResponse:
    job = await start_job(services, wake, file, text_column, id_column, lang_column, mode, lang)
    job, progress = await load_job(services, job.id)
    errors = await run_in_threadpool(services.store.row_errors, job.id)
    return JSONResponse(
        job_document(job, progress, errors), status_code=202, headers={"Location": f"/api/v1/batches/{job.id}"}
    )


@router.get("/api/v1/batches/{job_id}", responses=PROBLEM_RESPONSES)
async def get_batch(job_id: str, services: ServicesDep) -> JSONResponse:
    job, progress = await load_job(services, job_id)
    errors = await run_in_threadpool(services.store.row_errors, job_id)
    return JSONResponse(job_document(job, progress, errors))


async def retry_rows(services: Services, wake: asyncio.Event, job_id: str, language: str) -> int:
    """The job's failed rows queued again in `language`, once the job is complete."""
    _, progress = await load_job(services, job_id)
    if progress.status != "complete":
        raise BatchBusy(f"batch {job_id} is {progress.status}; failed rows can be retried once it is complete")
    count = await run_in_threadpool(retry_failed, services, job_id, language)
    if count:
        wake.set()
    return count


@router.post("/api/v1/batches/{job_id}/retry", status_code=202, dependencies=[RateLimit], responses=PROBLEM_RESPONSES)
async def retry_batch(
    job_id: str,
    services: ServicesDep,
    wake: BatchWake,
    lang: Annotated[str, Form(description="The language to analyse the failed rows in")],
) -> JSONResponse:
    """Analyses the rows whose analysis failed again, in the language given (rows never readable stay failed)."""
    count = await retry_rows(services, wake, job_id, lang)
    job, progress = await load_job(services, job_id)
    errors = await run_in_threadpool(services.store.row_errors, job_id)
    return JSONResponse({**job_document(job, progress, errors), "retried": count}, status_code=202)


@router.get("/api/v1/batches/{job_id}/events", responses=PROBLEM_RESPONSES)
async def batch_events(job_id: str, services: ServicesDep) -> Response:
    """`progress` events (status, total, processed, errors, percent) until `done`."""
    await load_job(services, job_id)

    async def events() -> AsyncIterator[tuple[int, ServerSentEvent]]:
        number = 0
        async for progress in progress_until_complete(services, job_id):
            yield number, ServerSentEvent(json.dumps(progress.to_dict()), event="progress", id=str(number))
            number += 1
        yield number, ServerSentEvent(json.dumps({"job_id": job_id}), event="done", id=str(number))

    return respond(events(), lambda _n, message: [message])


def _download(services: Services, job_id: str, kind: str, chosen: RecordFilter) -> StreamingResponse:
    def chunks() -> Iterator[str]:
        # 500 results at a time, so a 100,000-row job streams without sitting in memory
        rows = (result for _, result in selected(services.store, job_id, chosen))
        buffer = io.StringIO()
        out = csv.writer(buffer)
        if kind == "csv":
            out.writerow(RESULT_COLUMNS)
        while batch := list(itertools.islice(rows, 500)):
            if kind == "csv":
                out.writerows(result_row(result) for result in batch)
            else:
                write_jsonl(batch, buffer)
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        if buffer.tell():
            yield buffer.getvalue()

    media = "application/x-ndjson" if kind == "jsonl" else "text/csv; charset=utf-8"
    subset = "-".join(chosen.labels) if chosen.labels else ""
    name = "-".join(part for part in ("unerase", job_id[:8], subset) if part)
    disposition = f'attachment; filename="{name}.{kind}"'
    return StreamingResponse(
        iterate_in_threadpool(chunks()), media_type=media, headers={"Content-Disposition": disposition}
    )


LABEL_HELP = f"Only records with these labels, comma-separated: {', '.join(SUBSETS)} (failed: not analysed)"


def downloaded_records(
    label: Annotated[str, Query(description=LABEL_HELP)] = "",
    term: Annotated[str, Query(description="Only records with this term (not in a neutral use)")] = "",
    category: Annotated[str, Query(description="Only records about this targeted characteristic")] = "",
) -> RecordFilter:
    """The records a download asks for: the same three filters for both formats."""
    return RecordFilter.parse(label, term, category)


RecordFilterDep = Annotated[RecordFilter, Depends(downloaded_records)]


@router.get("/api/v1/batches/{job_id}/results.jsonl", responses=PROBLEM_RESPONSES)
async def results_jsonl(job_id: str, services: ServicesDep, chosen: RecordFilterDep) -> StreamingResponse:
    await load_job(services, job_id)
    return _download(services, job_id, "jsonl", chosen)


@router.get("/api/v1/batches/{job_id}/results.csv", responses=PROBLEM_RESPONSES)
async def results_csv(job_id: str, services: ServicesDep, chosen: RecordFilterDep) -> StreamingResponse:
    await load_job(services, job_id)
    return _download(services, job_id, "csv", chosen)


@router.get("/api/v1/batches/{job_id}/report", responses=PROBLEM_RESPONSES)
async def report_json(job_id: str, services: ServicesDep) -> JSONResponse:
    job, progress = await load_job(services, job_id)
    if job.stats is None:
        raise UneraseError(
            f"batch {job_id} is {progress.status} ({progress.percent}%); the report exists once it is complete"
        )
    return JSONResponse({"id": job.id, **progress.to_dict(), **json.loads(job.stats)})


# -- pages -------------------------------------------------------------------------------------
@router.get("/batches", response_class=HTMLResponse, include_in_schema=False)
def batches_page(request: Request, services: ServicesDep, templates: TemplatesDep) -> Response:
    return templates.TemplateResponse(request, "batches.html", form_context(services))


def form_context(services: Services, **values: Any) -> dict[str, Any]:
    return {
        "max_bytes": services.settings.max_upload_bytes,
        "languages": services.detector.languages,
        "fallback": fallback_language(services),
        **values,
    }


@router.post("/batches", include_in_schema=False, dependencies=[RateLimit])
async def upload_page(
    request: Request,
    services: ServicesDep,
    wake: BatchWake,
    templates: TemplatesDep,
    file: Annotated[UploadFile, File()],
    text_column: Annotated[str, Form()] = "",
    id_column: Annotated[str, Form()] = "",
    lang_column: Annotated[str, Form()] = "",
    lang: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "",
) -> Response:
    try:
        if mode not in ("", "fast", "thorough"):
            raise UneraseError(f"mode '{mode}' is not known; accepted: fast, thorough")
        job = await start_job(services, wake, file, text_column, id_column, lang_column, mode, lang)
    except UneraseError as exc:
        context = form_context(
            services,
            error=exc.message,
            text_column=text_column,
            id_column=id_column,
            lang_column=lang_column,
            lang=lang,
            mode=mode,
        )
        return templates.TemplateResponse(request, "batches.html", context, status_code=exc.status)
    return RedirectResponse(f"/batches/{job.id}", status_code=303)


@router.post("/batches/{job_id}/retry", include_in_schema=False, dependencies=[RateLimit])
async def retry_page(
    request: Request,
    job_id: str,
    services: ServicesDep,
    wake: BatchWake,
    templates: TemplatesDep,
    lang: Annotated[str, Form()] = "",
) -> Response:
    try:
        count = await retry_rows(services, wake, job_id, lang)
    except UneraseError as exc:
        if isinstance(exc, NotFound):
            raise
        job, progress = await load_job(services, job_id)
        errors = await run_in_threadpool(services.store.row_errors, job_id)
        retryable = await run_in_threadpool(services.store.retryable_rows, job_id)
        context = job_context(services, job, progress, errors, retryable, retry_error=exc.message)
        return templates.TemplateResponse(request, "batch.html", context, status_code=exc.status)
    return RedirectResponse(f"/batches/{job_id}?retried={count}", status_code=303)


@router.get("/batches/{job_id}", response_class=HTMLResponse, include_in_schema=False)
async def job_page(
    request: Request, job_id: str, services: ServicesDep, templates: TemplatesDep, retried: int | None = None
) -> Response:
    job, progress = await load_job(services, job_id)
    errors = await run_in_threadpool(services.store.row_errors, job_id)
    retryable = await run_in_threadpool(services.store.retryable_rows, job_id)
    context = job_context(services, job, progress, errors, retryable, retried=retried)
    return templates.TemplateResponse(request, "batch.html", context)


def job_context(
    services: Services, job: BatchJob, progress: Progress, errors: list[Any], retryable: int, **values: Any
) -> dict[str, Any]:
    return {
        "job": job,
        "progress": progress,
        "errors": errors,
        # rows that were never readable (no text) cannot be helped by another language
        "retryable": retryable,
        "languages": services.detector.languages,
        **values,
    }


@router.get("/batches/{job_id}/stream", include_in_schema=False)
async def job_stream(request: Request, job_id: str, services: ServicesDep, templates: TemplatesDep) -> Response:
    """The progress bar as HTML fragments over SSE, ending with `done` (links to the report)."""
    job, _ = await load_job(services, job_id)
    macros: Any = templates.env.get_template("_batch.html").module

    async def events() -> AsyncIterator[tuple[int, ServerSentEvent]]:
        number = 0
        last: Progress | None = None
        async for progress in progress_until_complete(services, job_id):
            html = str(macros.progress_bar(progress)).strip()
            yield number, ServerSentEvent(html, event="progress", id=str(number))
            number += 1
            last = progress
        done = str(macros.finished(job)).strip()
        if last is not None:
            # rows that failed while the page was open replace the list it loaded with (an out-of-band swap)
            errors = await run_in_threadpool(services.store.row_errors, job_id)
            retryable = await run_in_threadpool(services.store.retryable_rows, job_id)
            context = job_context(services, job, last, errors, retryable)
            done += str(
                macros.failed_rows(job, last, errors, context["retryable"], context["languages"], None, True)
            ).strip()
        yield number, ServerSentEvent(done, event="done", id=str(number))

    return respond(events(), lambda _n, message: [message])


REPORT_ROWS = 500  # records listed on the page; the downloads hold every one


@router.get("/batches/{job_id}/report", response_class=HTMLResponse, include_in_schema=False)
async def report_page(
    request: Request,
    job_id: str,
    services: ServicesDep,
    templates: TemplatesDep,
    label: str | None = None,
    term: str = "",
    category: str = "",
) -> Response:
    job, progress = await load_job(services, job_id)
    if job.stats is None:
        return RedirectResponse(f"/batches/{job_id}", status_code=303)
    raw = json.loads(job.stats)
    stats = in_words(raw)
    charts = [
        ("Decisions", bar_chart([tuple(item) for item in stats["decisions"]], title="Decisions")),
        (
            "Targeted characteristics",
            bar_chart([tuple(item) for item in stats["categories"]], title="Targeted characteristics"),
        ),
        (
            "Most frequent terms",
            bar_chart([tuple(item) for item in stats["terms"]], title="Most frequent terms", max_bars=20),
        ),
        ("Languages", bar_chart([tuple(item) for item in stats["languages"]], title="Languages")),
    ]
    # without a label in the address, the table lists what needs a person's eyes: flagged and deferred records
    chosen = RecordFilter.parse(",".join(FLAGGED_OR_DEFERRED) if label is None else label, term, category)
    records, matching = await run_in_threadpool(report_records, services.store, job_id, chosen, REPORT_ROWS)
    context = {
        "job": job,
        "progress": progress,
        "stats": stats,
        "charts": charts,
        "records": records,
        "matching": matching,
        "chosen": chosen,
        "label_value": ",".join(chosen.labels),
        "label_choices": [
            (",".join(FLAGGED_OR_DEFERRED), "flagged or needs review"),
            ("flagged", "flagged"),
            ("needs_review", "needs review"),
            ("not_flagged", "not flagged"),
            ("failed", "failed (not analysed)"),
            ("", "all records"),
        ],
        "terms": [name for name, _ in raw["terms"]],
        "categories": [name for name, _ in raw["categories"]],
        "subsets": [("flagged", "Flagged"), ("needs_review", "Needs review"), ("failed", "Failed")],
        "subset_counts": {**dict(raw["decisions"]), "failed": raw["errors"]},
        "query": urlencode(chosen.query()),
    }
    return templates.TemplateResponse(request, "report.html", context)
