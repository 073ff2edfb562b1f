"""API v1: analyses as JSON, as a stream of JSON events (SSE), or started in the background.

POST /api/v1/analyses answers in one of three ways, chosen by the client:
- default: waits for the whole analysis and returns it (201);
- `Accept: text/event-stream`: the response *is* the event stream; closing it cancels the work;
- `Prefer: respond-async`: returns 202 at once; the analysis runs in the background and can be
  polled (GET .../{id}) or followed (GET .../{id}/events).
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from engine.result import stored
from web.analyses import load_record, new_record
from web.bodies import JsonBody
from web.deps import RateLimit, ServicesDep
from web.errors import PROBLEM_RESPONSES, NotFound
from web.results import DocumentResponse, analysis_document, links
from web.sse import json_message, last_event_id, respond
from web.store import Finished

router = APIRouter(prefix="/api/v1", tags=["analyses"])


class AnalysisRequest(JsonBody):
    text: str = Field(description="The text to analyse (at most `max_text_chars` characters).")
    lang: str | None = Field(
        default=None, description="Language code (en, fr, el, de, nl, it, pt); detected if absent."
    )
    mode: Literal["fast", "thorough"] | None = Field(
        default=None, description="fast: only ambiguous hits go to the LLM."
    )


@router.post(
    "/analyses",
    status_code=201,
    dependencies=[RateLimit],
    responses={
        202: {"description": "Accepted (Prefer: respond-async); follow the links"},
        **PROBLEM_RESPONSES,
    },
)
async def create_analysis(
    body: AnalysisRequest,
    request: Request,
    services: ServicesDep,
    accept: Annotated[str, Header()] = "",
    prefer: Annotated[str, Header()] = "",
) -> Response:
    record = new_record(services, body.text, body.lang, body.mode, "api")
    location = {"Location": f"/api/v1/analyses/{record.id}"}
    if "text/event-stream" not in accept and "respond-async" not in prefer:
        # nobody else can know this analysis before the answer: run it here and store it once, finished,
        # in a commit shared with the other requests finishing now; it is stored when the answer leaves
        analysis = services.analyzer.analyze(record.text, record.requested_language, record.mode, record.id)
        events = [stored(event) async for event in analysis]
        await services.runs.writer.save(Finished(record.id, events, new=record))
        record.status = "complete"
        return DocumentResponse(analysis_document(record, events), status_code=201, headers=location)
    streamed = "text/event-stream" in accept
    # claimed by this process as it is stored (or, for background work on a web node, queued for the workers)
    record = services.runs.prepare(record, detached=not streamed)
    await run_in_threadpool(services.store.create_analysis, record)
    await services.runs.launch([record])
    if streamed:
        response = respond(services.runs.events_of(record), lambda n, e: [json_message(n, e)])
        response.headers.update(location)
        return response
    body_202 = {"id": record.id, "status": "pending", "links": links(record.id)}
    return JSONResponse(body_202, status_code=202, headers=location)


@router.get("/analyses/{analysis_id}", responses=PROBLEM_RESPONSES)
async def get_analysis(analysis_id: str, services: ServicesDep) -> JSONResponse:
    found = await services.runs.lookup(analysis_id, await load_record(services, analysis_id))
    if found is None:  # deleted a moment ago
        raise NotFound(f"no analysis has the id '{analysis_id}'; ids are returned by POST /api/v1/analyses")
    return DocumentResponse(analysis_document(found.record, found.events))


@router.get(
    "/analyses/{analysis_id}/events",
    responses={200: {"content": {"text/event-stream": {}}, "description": "The analysis as SSE"}, **PROBLEM_RESPONSES},
)
async def analysis_events(analysis_id: str, request: Request, services: ServicesDep) -> Response:
    """Replays a finished analysis, or follows (and if needed starts) a running one.

    Events carry their position in the stream as their id, the same on every node; a reconnecting client sending
    Last-Event-ID gets only later ones, wherever it reconnects.
    """
    record = await load_record(services, analysis_id)
    events = services.runs.events_of(record, after=last_event_id(request))
    return respond(events, lambda n, e: [json_message(n, e)])
