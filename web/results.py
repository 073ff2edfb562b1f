"""One analysis result as a single JSON document: the record's fields around the engine's fold of its stream.

The API, the permalink page and the no-JavaScript page all read this shape, so a result looks
the same whether it was streamed, waited for or replayed from the database. The fold itself is the
engine's (engine/result.py), shared with the command line, batch results and the stored rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson
from starlette.responses import JSONResponse

from engine.result import StoredEvent, fold
from web.models import AnalysisRecord, iso


class DocumentResponse(JSONResponse):
    """A JSON answer encoded by orjson: with the standard encoder, encoding was about 9 % of the event loop's time
    under load (benchmarks/README.md, "Web")."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)


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
