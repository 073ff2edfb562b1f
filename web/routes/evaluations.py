"""/admin/evaluations: measure the server's configuration on a labelled file, and run the fairness audit.

Admin only, like /admin/sites (web.admin.require_admin; forms carry its CSRF token). The work is
a batch job (web/evaluations.py): this page shows its progress over SSE and, once complete, the same
report as `unerase eval` / `unerase audit`, with charts.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sse_starlette import ServerSentEvent
from starlette.concurrency import run_in_threadpool

from engine.errors import UneraseError
from engine.evaluation import REVIEW_AS
from engine.labelled import DEFAULT_NEGATIVE, DEFAULT_POSITIVE, Columns, Labels
from web import evaluations
from web.admin import Admin, check_csrf, form_token, who
from web.batches import progress_until_complete, read_upload
from web.deps import BatchWake, ServicesDep, TemplatesDep
from web.errors import NotFound
from web.models import Evaluation
from web.services import Services
from web.sse import respond

router = APIRouter(tags=["admin"])


def _values(text: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in text.split(",") if v.strip())


async def _load(services: Services, evaluation_id: str) -> Evaluation:
    evaluation = await run_in_threadpool(evaluations.get, services, evaluation_id)
    if evaluation is None:
        raise NotFound(f"no evaluation has the id '{evaluation_id}'; /admin/evaluations lists them")
    return evaluation


async def _list_page(
    request: Request, services: Services, templates: Any, error: str | None = None, form: dict[str, str] | None = None
) -> Response:
    past = await run_in_threadpool(evaluations.recent, services)
    context = {
        "evaluations": [(e, evaluations.headline(e)) for e in past],
        "csrf": await form_token(request, services),
        "languages": services.detector.languages,
        "review_as": REVIEW_AS,
        "default_positive": ",".join(DEFAULT_POSITIVE),
        "default_negative": ",".join(DEFAULT_NEGATIVE),
        "default_mode": services.settings.mode,
        "error": error,
        "form": form or {},
    }
    response: Response = templates.TemplateResponse(
        request, "admin_evaluations.html", context, status_code=422 if error else 200
    )
    return response


@router.get("/admin/evaluations", response_class=HTMLResponse, dependencies=[Admin], include_in_schema=False)
async def evaluations_page(request: Request, services: ServicesDep, templates: TemplatesDep) -> Response:
    return await _list_page(request, services, templates)


@router.post("/admin/evaluations", dependencies=[Admin], include_in_schema=False)
async def upload_evaluation(
    request: Request,
    services: ServicesDep,
    wake: BatchWake,
    templates: TemplatesDep,
    csrf: Annotated[str, Form()],
    file: Annotated[UploadFile, File()],
    text_column: Annotated[str, Form()] = "text",
    label_column: Annotated[str, Form()] = "label",
    positive: Annotated[str, Form()] = "",
    negative: Annotated[str, Form()] = "",
    lang_column: Annotated[str, Form()] = "",
    group_column: Annotated[str, Form()] = "",
    term_column: Annotated[str, Form()] = "",
    span_column: Annotated[str, Form()] = "",
    review_as: Annotated[str, Form()] = "separate",
    mode: Annotated[str, Form()] = "",
) -> Response:
    await check_csrf(request, services, csrf)
    form = {
        "text_column": text_column,
        "label_column": label_column,
        "positive": positive,
        "negative": negative,
        "lang_column": lang_column,
        "group_column": group_column,
        "term_column": term_column,
        "span_column": span_column,
        "review_as": review_as,
        "mode": mode,
    }
    try:
        if mode not in ("", "fast", "thorough"):
            raise UneraseError(f"mode '{mode}' is not known; accepted: fast, thorough")
        if review_as not in REVIEW_AS:
            raise UneraseError(f"needs_review counted as '{review_as}' is not known; accepted: {', '.join(REVIEW_AS)}")
        # as in `unerase eval`: without positive values, the defaults for both; with them, every other value is
        # negative unless negative values are given
        if _values(positive):
            labels = Labels(_values(positive), _values(negative))
        else:
            labels = Labels(DEFAULT_POSITIVE, _values(negative) or DEFAULT_NEGATIVE)
        columns = Columns(
            text_column.strip() or "text",
            label_column.strip() or "label",
            lang_column.strip() or None,
            group_column.strip() or None,
            term_column.strip() or None,
            span_column.strip() or None,
        )
        data = await read_upload(file, services.settings.max_upload_bytes)
        options = evaluations.EvalOptions(columns, labels, review_as, mode)
        evaluation = await run_in_threadpool(
            evaluations.create_evaluation, services, data, file.filename or "upload.csv", options, await who(request)
        )
    except UneraseError as exc:
        return await _list_page(request, services, templates, exc.message, form)
    wake.set()
    return RedirectResponse(f"/admin/evaluations/{evaluation.id}", status_code=303)


@router.post("/admin/evaluations/audit", dependencies=[Admin], include_in_schema=False)
async def start_audit(
    request: Request,
    services: ServicesDep,
    wake: BatchWake,
    templates: TemplatesDep,
    csrf: Annotated[str, Form()],
    language: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "",
) -> Response:
    await check_csrf(request, services, csrf)
    try:
        if mode not in ("", "fast", "thorough"):
            raise UneraseError(f"mode '{mode}' is not known; accepted: fast, thorough")
        languages = [language] if language else []
        evaluation = await run_in_threadpool(evaluations.create_audit, services, languages, mode, await who(request))
    except UneraseError as exc:
        return await _list_page(request, services, templates, exc.message)
    wake.set()
    return RedirectResponse(f"/admin/evaluations/{evaluation.id}", status_code=303)


def _view(evaluation: Evaluation, report: dict[str, Any] | None) -> dict[str, Any]:
    if report is None:
        return {"evaluation": evaluation, "runs": None, "audit": None}
    if evaluation.kind == "audit":
        return {"evaluation": evaluation, "runs": None, "audit": report}
    return {"evaluation": evaluation, "runs": [report], "audit": None}


@router.get(
    "/admin/evaluations/{evaluation_id}", response_class=HTMLResponse, dependencies=[Admin], include_in_schema=False
)
async def evaluation_page(
    request: Request, evaluation_id: str, services: ServicesDep, templates: TemplatesDep
) -> Response:
    evaluation = await _load(services, evaluation_id)
    report = await run_in_threadpool(evaluations.report_of, services, evaluation)
    progress = await run_in_threadpool(services.store.progress, evaluation.job_id)
    errors = await run_in_threadpool(services.store.row_errors, evaluation.job_id)
    context = {**_view(evaluation, report), "progress": progress, "errors": errors}
    return templates.TemplateResponse(request, "admin_evaluation.html", context)


@router.get("/admin/evaluations/{evaluation_id}/stream", dependencies=[Admin], include_in_schema=False)
async def evaluation_stream(
    request: Request, evaluation_id: str, services: ServicesDep, templates: TemplatesDep
) -> Response:
    """Progress bar fragments while the texts are analysed, then `done` with the whole report."""
    evaluation = await _load(services, evaluation_id)
    progress_macros: Any = templates.env.get_template("_batch.html").module
    page: Any = templates.env.get_template("_evaluation.html").module

    async def events() -> AsyncIterator[tuple[int, ServerSentEvent]]:
        number = 0
        async for progress in progress_until_complete(services, evaluation.job_id):
            html = str(progress_macros.progress_bar(progress)).strip()
            yield number, ServerSentEvent(html, event="progress", id=str(number))
            number += 1
        report = await run_in_threadpool(evaluations.report_of, services, evaluation)
        view = _view(evaluation, report)
        html = str(page.result(view["evaluation"], view["runs"], view["audit"])).strip()
        yield number, ServerSentEvent(html, event="done", id=str(number))

    return respond(events(), lambda _n, message: [message])


@router.get("/admin/evaluations/{evaluation_id}/report.json", dependencies=[Admin], include_in_schema=False)
async def evaluation_json(evaluation_id: str, services: ServicesDep) -> Response:
    evaluation = await _load(services, evaluation_id)
    report = await run_in_threadpool(evaluations.report_of, services, evaluation)
    if report is None:
        raise UneraseError(f"evaluation {evaluation_id} is still running; its report exists once it is complete")
    disposition = f'attachment; filename="evaluation-{evaluation_id[:8]}.json"'
    return JSONResponse(report, headers={"Content-Disposition": disposition})
