"""One analysis result as a single JSON document, folded from its event stream.

The API, the permalink page and the no-JavaScript page all read this shape, so a result looks
the same whether it was streamed, waited for or replayed from the database.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from starlette.responses import JSONResponse

from web.models import AnalysisRecord, iso
from web.store import StoredEvent


class DocumentResponse(JSONResponse):
    """A JSON answer encoded by orjson: with the standard encoder, encoding was about 9 % of the event loop's time
    under load (benchmarks/README.md, "Web")."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


def fold(events: Sequence[StoredEvent]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "language": None,
        "hits": [],
        "targeting": None,
        "explanation": None,
        "decision": None,
        "errors": [],
    }
    hits: dict[str, dict[str, Any]] = {}
    for event in events:
        kind, data = event["type"], event["data"]
        if kind == "analysis":
            result.update(
                language=data["language"],
                language_detected=data["language_detected"],
                language_confidence=data["language_confidence"],
                mode=data["mode"],
                vocabulary_version=data["vocabulary_version"],
                prompt_version=data["prompt_version"],
                models=data["models"],
            )
        elif kind == "hit":
            hit = hits[data["id"]] = {**data, "verdict": None}
            result["hits"].append(hit)
        elif kind == "verdict" and data["hit_id"] in hits:
            hits[data["hit_id"]]["verdict"] = data
        elif kind in ("targeting", "explanation", "decision"):
            result[kind] = data
        elif kind == "error":
            result["errors"].append(data)
        elif kind == "done":
            result.update(elapsed_ms=data["elapsed_ms"], cached=data["cached"], llm_calls=data["llm_calls"])
    return result


def analysis_document(record: AnalysisRecord, events: Sequence[StoredEvent], base: str = "") -> dict[str, Any]:
    return {
        "id": record.id,
        "status": record.status,
        "created_at": iso(record.created_at),
        "text": record.text,
        "requested_language": record.requested_language,
        **fold(events),
        "links": links(record.id, base),
    }


def links(analysis_id: str, base: str = "") -> dict[str, str]:
    return {
        "self": f"{base}/api/v1/analyses/{analysis_id}",
        "events": f"{base}/api/v1/analyses/{analysis_id}/events",
        "page": f"{base}/analyses/{analysis_id}",
    }
