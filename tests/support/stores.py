"""A stored analysis's event stream for storage tests (the `store` fixture itself is in tests/conftest.py)."""

from __future__ import annotations

from typing import Any

EVENTS: list[dict[str, Any]] = [
    {"type": "analysis", "data": {"language": "en", "analysis_id": "a1"}},
    {
        "type": "hit",
        "data": {
            "id": "h1",
            "start": 2,
            "end": 8,
            "surface": "faggot",
            "term": "faggot",
            "term_id": "t1",
            "issue_id": "i1",
            "categories": ["sexual-orientation"],
            "ambiguous": False,
            "obfuscated": False,
        },
    },
    {
        "type": "verdict",
        "data": {
            "hit_id": "h1",
            "status": "contentious",
            "confidence": 0.9,
            "decided_by": "vocabulary",
            "explanation": "an insult",
        },
    },
    {
        "type": "decision",
        "data": {
            "label": "flagged",
            "severity": "moderate",
            "confidence": 0.9,
            "categories": ["sexual-orientation"],
            "reasons": ["1 contentious term(s)"],
        },
    },
    {"type": "done", "data": {"elapsed_ms": 3.5, "cached": False, "llm_calls": 0}},
]
