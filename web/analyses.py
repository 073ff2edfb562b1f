"""Analysis records for the routes that make or read them (API, demo page, annotations, statement of reasons):
checked before anything is stored, loaded with the rule on whose they are."""

from __future__ import annotations

import uuid

from starlette.concurrency import run_in_threadpool

from web.errors import NotFound
from web.models import AnalysisRecord
from web.runs import Runs
from web.services import Services


def new_record(
    services: Services, text: str, lang: str | None, mode: str | None, source: str, detect: bool = False
) -> AnalysisRecord:
    """A checked, not yet stored analysis; with `detect`, a text whose language cannot be told is refused too."""
    services.check_text(text, lang)
    if detect and not lang:
        services.detect_language(text)
    return AnalysisRecord(
        id=uuid.uuid4().hex,
        text=text,
        requested_language=lang or None,
        mode=mode or services.settings.mode,
        source=source,
    )


async def create_record(
    services: Services, text: str, lang: str | None, mode: str | None, source: str, detect: bool = False
) -> AnalysisRecord:
    if detect and not lang:  # detecting reads the text: off the event loop
        record = await run_in_threadpool(new_record, services, text, lang, mode, source, detect)
    else:
        record = new_record(services, text, lang, mode, source)
    await run_in_threadpool(services.store.create_analysis, record)
    return record


async def load_record(services: Services, analysis_id: str, sites: bool = False) -> AnalysisRecord:
    """A stored analysis. Those a site's widget made are the site's, served by its widget endpoints only
    (`sites`: True where the person whose post it is reads it, the statement of reasons)."""
    record = await run_in_threadpool(services.store.analysis, analysis_id)
    if record is None or (record.source == "widget" and not sites):
        raise NotFound(f"no analysis has the id '{analysis_id}'; ids are returned by POST /api/v1/analyses")
    return record


async def finished_events(runs: Runs, record: AnalysisRecord) -> list[dict[str, object]]:
    return [event async for _, event in runs.events_of(record)]
