"""The demo page: a text in, the vocabulary hits shown in place with their explanations."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse

from engine.errors import InputTooLarge, UneraseError
from web.deps import DetectorDep, SettingsDep, TemplatesDep

router = APIRouter()


def _segments(text: str, hits: list[Any]) -> list[tuple[str, Any]]:
    """The text cut into plain pieces and hit pieces, for the template to mark up."""
    pieces: list[tuple[str, Any]] = []
    position = 0
    for hit in hits:
        if hit.start > position:
            pieces.append((text[position : hit.start], None))
        pieces.append((text[hit.start : hit.end], hit))
        position = hit.end
    if position < len(text):
        pieces.append((text[position:], None))
    return pieces


def _context(detector: DetectorDep, settings: SettingsDep) -> dict[str, Any]:
    return {
        "languages": detector.languages,
        "vocabulary_version": detector.vocabulary.version,
        "mode": "vocabulary only (no LLM configured)",
        "max_chars": settings.max_text_chars,
    }


@router.get("/", response_class=HTMLResponse)
def demo(request: Request, detector: DetectorDep, settings: SettingsDep, templates: TemplatesDep) -> HTMLResponse:
    return templates.TemplateResponse(request, "demo.html", {**_context(detector, settings), "text": "", "lang": ""})


@router.post("/", response_class=HTMLResponse)
def analyse(
    request: Request,
    detector: DetectorDep,
    settings: SettingsDep,
    templates: TemplatesDep,
    text: Annotated[str, Form()] = "",
    lang: Annotated[str, Form()] = "",
) -> HTMLResponse:
    context = {**_context(detector, settings), "text": text, "lang": lang}
    try:
        if len(text) > settings.max_text_chars:
            raise InputTooLarge(
                f"the text has {len(text):,} characters; at most {settings.max_text_chars:,} are accepted"
            )
        result = detector.detect(text, lang or None)
    except UneraseError as exc:
        return templates.TemplateResponse(
            request, "demo.html", {**context, "error": exc.message}, status_code=exc.status
        )
    context.update(result=result, segments=_segments(result.text, list(result.hits)))
    return templates.TemplateResponse(request, "demo.html", context)
