"""API v1: W3C Web Annotations for a list of texts (records of a collection, posts of a forum)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Literal

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import Field

from engine.errors import InputTooLarge, UneraseError
from engine.result import fold
from web.analyses import create_record, finished_events
from web.annotations import annotation_page
from web.bodies import JsonBody
from web.deps import RateLimit, ServicesDep
from web.errors import PROBLEM_RESPONSES

router = APIRouter(prefix="/api/v1", tags=["annotations"])
MAX_TEXTS = 100
ANNOTATION_JSONLD = 'application/ld+json; profile="http://www.w3.org/ns/anno.jsonld"'


class AnnotationText(JsonBody):
    id: str | None = Field(default=None, description="The record's identifier or URI; used as the target source.")
    text: str
    lang: str | None = None


class AnnotationRequest(JsonBody):
    texts: list[AnnotationText] = Field(description=f"1 to {MAX_TEXTS} texts.")
    mode: Literal["fast", "thorough"] | None = None


@router.post("/annotations", dependencies=[RateLimit], responses=PROBLEM_RESPONSES)
async def annotate(body: AnnotationRequest, services: ServicesDep) -> JSONResponse:
    if not 1 <= len(body.texts) <= MAX_TEXTS:
        raise InputTooLarge(f"{len(body.texts)} texts were sent; between 1 and {MAX_TEXTS} are accepted per request")
    for number, item in enumerate(body.texts):
        try:
            services.check_text(item.text, item.lang)
        except UneraseError as exc:
            raise type(exc)(f"texts[{number}]: {exc.message}") from exc
    records = [await create_record(services, t.text, t.lang, body.mode, "api") for t in body.texts]
    results = await asyncio.gather(*(finished_events(services.runs, r) for r in records))
    page = annotation_page(
        [
            (t.id or f"urn:unerase:analysis:{r.id}", r.text, fold(events))
            for t, r, events in zip(body.texts, records, results, strict=True)
        ],
        f"urn:uuid:{uuid.uuid4()}",
        {"type": "Software", "name": f"unerase {services.version}", "homepage": "/"},
    )
    return JSONResponse(page, media_type=ANNOTATION_JSONLD)
