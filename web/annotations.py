"""Analysis results as W3C Web Annotations (https://www.w3.org/TR/annotation-model/).

One annotation per hit that was not judged neutral. The target names the record and selects the
hit twice: by quote (TextQuoteSelector with up to 32 characters of prefix and suffix) and by
position (TextPositionSelector; offsets in Unicode code points, which is what Python counts).
The body says what the term is and why it matters (describing), which identity characteristics
it targets (classifying), what to use instead (commenting, editing), and links the vocabulary
entry and its sources (identifying, linking) — the shape heritage platforms import.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

CONTEXT = "http://www.w3.org/ns/anno.jsonld"
CONTEXT_CHARS = 32


def _text_body(value: str, purpose: str, language: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"type": "TextualBody", "value": value, "format": "text/plain", "purpose": purpose}
    if language:
        body["language"] = language
    return body


def hit_annotation(
    hit: Mapping[str, Any], text: str, source: str, generator: Mapping[str, Any], created: str
) -> dict[str, Any]:
    start, end = hit["start"], hit["end"]
    language = hit.get("language")
    bodies: list[dict[str, Any]] = [_text_body(hit["description"], "describing", language)]
    bodies += [_text_body(category, "classifying", None) for category in hit["categories"]]
    if hit.get("suggestion_note"):
        bodies.append(_text_body(hit["suggestion_note"], "commenting", language))
    bodies += [_text_body(term, "editing", language) for term in hit.get("suggested_terms", [])]
    verdict = hit.get("verdict")
    if verdict and verdict.get("explanation"):
        bodies.append(_text_body(verdict["explanation"], "assessing", language))
    if hit.get("uri"):
        bodies.append({"type": "SpecificResource", "source": hit["uri"], "purpose": "identifying"})
    bodies += [
        {"type": "SpecificResource", "source": s, "purpose": "linking"}
        for s in hit.get("sources", [])
        if s.startswith(("http://", "https://"))
    ]
    annotation: dict[str, Any] = {
        "id": f"urn:uuid:{uuid.uuid4()}",
        "type": "Annotation",
        "motivation": "classifying",
        "created": created,
        "generator": dict(generator),
        "body": bodies,
        "target": {
            "source": source,
            "selector": [
                {
                    "type": "TextQuoteSelector",
                    "exact": text[start:end],
                    "prefix": text[max(0, start - CONTEXT_CHARS) : start],
                    "suffix": text[end : end + CONTEXT_CHARS],
                },
                {"type": "TextPositionSelector", "start": start, "end": end},
            ],
        },
        "unerase:term": hit["term"],
        "unerase:ambiguous": hit["ambiguous"],
        "unerase:obfuscated": hit["obfuscated"],
    }
    if verdict:
        annotation["unerase:verdict"] = verdict["status"]
        annotation["unerase:confidence"] = verdict["confidence"]
        # quoted, reported, reclaimed, historical or attack (engine.uses); streams from before uses have none
        annotation["unerase:use"] = verdict.get("use", "attack")
    return annotation


def annotation_page(
    records: Sequence[tuple[str, str, Mapping[str, Any]]], page_id: str, generator: Mapping[str, Any]
) -> dict[str, Any]:
    """(source id, text, folded result) for each record; neutral hits are left out."""
    created = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    items = [
        hit_annotation(hit, text, source, generator, created)
        for source, text, result in records
        for hit in result["hits"]
        if not (hit.get("verdict") and hit["verdict"]["status"] == "neutral")
    ]
    return {
        "@context": [CONTEXT, {"unerase": "urn:unerase:"}],
        "id": page_id,
        "type": "AnnotationPage",
        "partOf": {"type": "AnnotationCollection", "total": len(items)},
        "startIndex": 0,
        "items": items,
    }
