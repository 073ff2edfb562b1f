"""The result of one analysis: its events as stored, and the one fold that turns them into a result.

Everything that reports an analysis reads it through `fold`: the API's result document and the pages
(web/results.py), the rows the web app stores (web/store.py), and the records of `unerase analyze --input`,
`unerase batch` and the web app's batch jobs (`record`). So the language, the hits with their verdicts and
the decision are the same whichever door a text came in by (docs/contracts.md, "Result document").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from engine.events import Event

# One event in its JSON form, as the web app stores and replays it: {"type": "hit", "data": {...}}, where
# `type` is the event's type (the SSE event name) and `data` its `to_dict()` payload.
StoredEvent = dict[str, Any]

# A hit's fields that explain its issue: the API document carries them, a record of the command line or of a
# batch leaves them out (they are the vocabulary's, the same for every text). A record's hits also leave out
# the rules' first reading of the use: the verdict carries the final one.
_RECORD_LEAVES_OUT = frozenset({"description", "suggestion_note", "suggested_terms", "sources", "use", "use_cue"})

_FROM_ANALYSIS = (
    "language",
    "language_detected",
    "language_confidence",
    "mode",
    "vocabulary_version",
    "prompt_version",
    "models",
)
_FROM_DONE = ("elapsed_ms", "cached", "llm_calls")


def stored(event: Event) -> StoredEvent:
    return {"type": event.type, "data": event.to_dict()}


def fold(events: Iterable[Event | StoredEvent]) -> dict[str, Any]:
    """The stream (typed events or their stored form, complete or not yet) as one result: the language and the
    analysis settings, the hits in stream order each with its verdict (or None), the targeting, explanation and
    decision (None until they arrive), the errors, and from `done` the time taken."""
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
        kind, data = (event["type"], event["data"]) if isinstance(event, dict) else (event.type, event.to_dict())
        if kind == "analysis":
            # read with get: a stream stored by an earlier version may lack a field added since
            result.update({key: data.get(key) for key in _FROM_ANALYSIS})
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
            result.update({key: data.get(key) for key in _FROM_DONE})
    return result


def record(result: Mapping[str, Any], record_id: Any = None) -> dict[str, Any]:
    """A folded result as one record of `unerase analyze --json`/`--input`, `unerase batch` and the web app's
    batch jobs: keyed by the record's id, its hits without the issue's explanation, and only the parts the
    stream had (no `targeting`, `explanation` or `decision` key when it ended without one, `errors` only when
    there were some).

    The language is `language`, as in the API document; `lang` repeats it for one release, for readers of
    records written by earlier versions (deprecated: read `language`)."""
    line: dict[str, Any] = {"id": record_id}
    if "mode" in result:  # the stream began (an `analysis` event)
        line.update(language=result["language"], lang=result["language"], mode=result["mode"], models=result["models"])
    line["hits"] = [
        {key: value for key, value in hit.items() if key not in _RECORD_LEAVES_OUT} for hit in result["hits"]
    ]
    for part in ("targeting", "explanation", "decision"):
        if result.get(part) is not None:
            line[part] = result[part]
    if result.get("errors"):
        line["errors"] = result["errors"]
    return line


def summary(events: Iterable[Event | StoredEvent], record_id: Any = None) -> dict[str, Any]:
    """The record (`record`) of a whole stream."""
    return record(fold(events), record_id)


def language_of(result: Mapping[str, Any]) -> str | None:
    """A result's or a record's language, also from a record written by an earlier version (which named it `lang`)."""
    language = result.get("language", result.get("lang"))
    return language if isinstance(language, str) else None
