"""The demo page: a text in, its analysis streamed into the page (or rendered whole without JavaScript)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from engine.errors import UneraseError
from engine.result import fold
from web.analyses import create_record, finished_events, load_record
from web.deps import RateLimit, ServicesDep, TemplatesDep
from web.render import HTMLStream, segments
from web.services import Services
from web.sites import DEMO_SITE
from web.sse import last_event_id, respond

router = APIRouter(include_in_schema=False)

LANGUAGE_NAMES = {
    "de": "German",
    "el": "Greek",
    "en": "English",
    "fr": "French",
    "it": "Italian",
    "nl": "Dutch",
    "pt": "Portuguese",
}


def form_context(services: Services, text: str = "", lang: str = "", mode: str = "") -> dict[str, Any]:
    return {
        "language_names": [(code, LANGUAGE_NAMES.get(code, code)) for code in services.detector.languages],
        "has_model": bool(services.analyzer.backends.all()),
        "examples": services.examples,
        "max_chars": services.settings.max_text_chars,
        "text": text,
        "lang": lang,
        "mode": mode or services.settings.mode,
    }


@router.get("/", response_class=HTMLResponse)
def demo(request: Request, services: ServicesDep, templates: TemplatesDep, example: int | None = None) -> Response:
    text = lang = ""
    if example is not None and 0 <= example < len(services.examples):
        text, lang = services.examples[example].text, services.examples[example].lang
    return templates.TemplateResponse(request, "demo.html", form_context(services, text, lang))


FORUM_CSP = (
    # the widget styles its own shadow root with a <style> element: inline styles allowed here, never scripts
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


@router.get("/demo/forum", response_class=HTMLResponse)
def forum(request: Request, services: ServicesDep, templates: TemplatesDep, site: str = DEMO_SITE) -> Response:
    """A forum thread written by the team, with the widget embedded as any forum would embed it."""
    response = templates.TemplateResponse(request, "forum.html", {"thread": services.forum, "site_key": site})
    response.headers["Content-Security-Policy"] = FORUM_CSP
    return response


@router.post("/", response_class=HTMLResponse, dependencies=[RateLimit])
async def analyse(
    request: Request,
    services: ServicesDep,
    templates: TemplatesDep,
    text: Annotated[str, Form()] = "",
    lang: Annotated[str, Form()] = "",
    mode: Annotated[str, Form()] = "",
) -> Response:
    htmx = request.headers.get("hx-request") == "true"
    try:
        if mode and mode not in ("fast", "thorough"):
            raise UneraseError(f"mode '{mode}' is not known; accepted: fast, thorough")
        # a text too short to tell its language comes back to the form, which has the list to choose it from; stored
        # and run, it would only end in a failed step
        record = await create_record(services, text, lang or None, mode or None, "demo", detect=True)
    except UneraseError as exc:
        context = {**form_context(services, text, lang, mode), "error": exc.message}
        name = "_error_fragment.html" if htmx else "demo.html"
        return templates.TemplateResponse(request, name, context, status_code=exc.status)
    if htmx:
        # the page streams the analysis over SSE; the address bar shows the permalink
        context = {"analysis_id": record.id, "text": record.text, "result": fold([]), "streaming": True}
        response = templates.TemplateResponse(request, "_analysis.html", context)
        response.headers["HX-Push-Url"] = f"/analyses/{record.id}"
        return response
    await finished_events(services.runs, record)  # without JavaScript: wait, then show the whole result
    return RedirectResponse(f"/analyses/{record.id}", status_code=303)


@router.get("/analyses/{analysis_id}", response_class=HTMLResponse)
async def permalink(request: Request, analysis_id: str, services: ServicesDep, templates: TemplatesDep) -> Response:
    record = await load_record(services, analysis_id)
    context: dict[str, Any] = {"analysis_id": record.id, "text": record.text}
    if record.status == "complete":
        result = fold(await finished_events(services.runs, record))
        context.update(result=result, streaming=False, segments=segments(record.text, result["hits"]))
    else:
        context.update(result=fold([]), streaming=True)
    return templates.TemplateResponse(request, "analysis.html", context)


@router.get("/analyses/{analysis_id}/stream")
async def stream(request: Request, analysis_id: str, services: ServicesDep, templates: TemplatesDep) -> Response:
    """The analysis as HTML fragments over SSE, for the htmx SSE extension on the page."""
    record = await load_record(services, analysis_id)
    render = HTMLStream(templates.env, record.text)
    resume = last_event_id(request)
    # a reconnect replays from the start into the renderer (it needs every hit) but sends only new messages
    events = services.runs.events_of(record)

    async def after_resume() -> Any:
        async for number, event in events:
            messages = render(number, event)
            if number > resume:
                yield number, messages

    return respond(_flatten(after_resume()), lambda _n, message: [message])


async def _flatten(groups: Any) -> Any:
    async for number, messages in groups:
        for message in messages:
            yield number, message
