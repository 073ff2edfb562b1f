"""The quality page (`/review/quality`), the moderator decisions as CSV (`/review/decisions.csv`), and the public
statement of reasons of one analysis (`/analyses/{id}/statement`, HTML or JSON).

The first two need a signed-in moderator or admin, like the rest of /review. This router must be included
before the review router: `/review/{analysis_id}` would otherwise take "quality" for an analysis id.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.concurrency import iterate_in_threadpool, run_in_threadpool

from engine.batch import neutralise_cell
from engine.errors import UneraseError
from web.analyses import finished_events, load_record
from web.auth import require_role
from web.charts import line_chart
from web.deps import ServicesDep, TemplatesDep
from web.models import User
from web.quality import PERIODS, DecisionRow, Quality, QualityFilter, QualityReport
from web.results import analysis_document
from web.statement import statement

router = APIRouter(tags=["quality"], include_in_schema=False)
Moderator = Annotated[User, Depends(require_role("moderator"))]


class NotFinished(UneraseError):
    status = 409
    code = "analysis-not-finished"


def quality_of(services: ServicesDep) -> Quality:
    return Quality(services.store.engine)


def filters_of(site: str | None = None, language: str | None = None, period: str | None = None) -> QualityFilter:
    return QualityFilter.parse(site, language, period)


QualityDep = Annotated[Quality, Depends(quality_of)]
FilterDep = Annotated[QualityFilter, Depends(filters_of)]


def calibration_chart(report: QualityReport) -> object:
    agreed = [(b.mean_confidence, b.agreement) for b in report.calibration]
    if not agreed:
        return None
    return line_chart(
        [("Moderator agreed", agreed), ("Perfectly calibrated", [(0.0, 0.0), (1.0, 1.0)])],
        title="Calibration of the automatic confidence",
        x_label="automatic confidence (mean of bin)",
        y_label="share the moderator agreed with",
    )


@router.get("/review/quality", response_class=HTMLResponse)
async def quality_page(
    request: Request, user: Moderator, quality: QualityDep, filters: FilterDep, templates: TemplatesDep
) -> Response:
    report = await run_in_threadpool(quality.report, filters)
    query = urlencode(filters.query())
    context = {
        "report": report,
        "filters": filters,
        "periods": PERIODS,
        "chart": calibration_chart(report),
        "csv_url": "/review/decisions.csv" + (f"?{query}" if query else ""),
        "user": user,
    }
    return templates.TemplateResponse(request, "quality.html", context)


@router.get("/review/decisions.csv")
async def decisions_csv(user: Moderator, quality: QualityDep, filters: FilterDep) -> StreamingResponse:
    def chunks() -> Iterator[str]:
        buffer = io.StringIO()
        out = csv.writer(buffer)
        out.writerow(DecisionRow.columns())
        for number, row in enumerate(quality.decision_rows(filters), start=1):
            # texts written by moderators reach a spreadsheet: no cell may run as a formula
            out.writerow([neutralise_cell(cell) for cell in row.cells()])
            if number % 500 == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
        yield buffer.getvalue()

    disposition = 'attachment; filename="unerase-decisions.csv"'
    return StreamingResponse(
        iterate_in_threadpool(chunks()),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": disposition},
    )


@router.get("/analyses/{analysis_id}/statement", response_class=HTMLResponse)
async def statement_of_reasons(
    analysis_id: str,
    request: Request,
    services: ServicesDep,
    templates: TemplatesDep,
    accept: Annotated[str, Header()] = "",
) -> Response:
    record = await load_record(services, analysis_id, sites=True)
    if record.status != "complete":
        raise NotFinished(
            f"analysis '{analysis_id}' is {record.status}; its statement of reasons exists once it is complete"
        )
    document = analysis_document(record, await finished_events(services.runs, record))
    decided = await run_in_threadpool(services.store.latest_decisions, [analysis_id])
    found = statement(document, decided.get(analysis_id), services.settings.contest_url)
    if "application/json" in accept and "text/html" not in accept:
        return JSONResponse(found.to_dict())
    # a site's post has no public page to go back to (load_record)
    context = {"statement": found, "linked": record.source != "widget"}
    return templates.TemplateResponse(request, "statement.html", context)
