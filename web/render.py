"""The analysis event stream as HTML fragments for the htmx SSE extension.

Each engine event becomes one SSE message whose name is the event type and whose data is the
fragment for the element listening to it (see templates/_analysis.html). Hits are gathered until
all have arrived (the `analysis` event says how many) and sent as one fragment: the text with
every hit marked, the list of terms and their popovers. A verdict updates its hit's badge and
popover out of band and adds one line to the screen-reader log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from jinja2 import Environment
from markupsafe import Markup
from sse_starlette import ServerSentEvent

from web.store import StoredEvent

CATEGORY_WORDS = {"migration-colonial-past": "migration and colonial past", "socioeconomic-status": "social class"}


def category_words(category: str) -> str:
    """A category id as the pages say it ("sexual-orientation" -> "sexual orientation")."""
    return CATEGORY_WORDS.get(category, category.replace("-", " "))


LABEL_WORDS = {"flagged": "flagged", "not_flagged": "not flagged", "needs_review": "needs review"}


def in_words(stats: dict[str, Any]) -> dict[str, Any]:
    """A batch report's counts with categories and decisions named as the pages name them."""
    return {
        **stats,
        "categories": [(category_words(name), count) for name, count in stats["categories"]],
        "decisions": [(LABEL_WORDS.get(name, name), count) for name, count in stats["decisions"]],
    }


def isolate(value: object) -> Markup:
    """A curator's, user's or model's string, escaped, in its own bidi isolate (`<bdi>`, also `dir="auto"`):
    a right-to-left override (U+202E) or right-to-left words in it cannot reorder the page's text around it."""
    return Markup("<bdi>%s</bdi>") % value


def install_filters(env: Environment) -> None:
    env.filters["category"] = category_words
    env.filters["bdi"] = isolate


VERDICT_WORDS = {"contentious": "offensive here", "neutral": "neutral use here", "undetermined": "undetermined"}


def segments(text: str, hits: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any] | None]]:
    """The text cut into plain pieces and hit pieces, for the template to mark up."""
    pieces: list[tuple[str, dict[str, Any] | None]] = []
    position = 0
    for hit in sorted(hits, key=lambda h: h["start"]):
        if hit["start"] < position:
            continue  # hits never overlap; this only guards the markup
        if hit["start"] > position:
            pieces.append((text[position : hit["start"]], None))
        pieces.append((text[hit["start"] : hit["end"]], hit))
        position = hit["end"]
    if position < len(text):
        pieces.append((text[position:], None))
    return pieces


class HTMLStream:
    """Stateful: one per SSE connection."""

    def __init__(self, env: Environment, text: str) -> None:
        self.macros: Any = env.get_template("_result.html").module
        self.text = text
        self.expected = -1
        self.language = ""
        self.hits: dict[str, dict[str, Any]] = {}

    def __call__(self, number: int, event: StoredEvent) -> list[ServerSentEvent]:
        kind, data = event["type"], event["data"]
        m = self.macros
        if kind == "analysis":
            self.expected, self.language = data.get("hit_count", 0), data["language"]
            messages = [self._message("analysis", str(m.meta(data)), number)]
            if self.expected == 0:
                messages.append(self._hits_message(number))
            return messages
        if kind == "hit":
            self.hits[data["id"]] = {**data, "verdict": None}
            return [self._hits_message(number)] if len(self.hits) == self.expected else []
        if kind == "verdict" and data["hit_id"] in self.hits:
            hit = self.hits[data["hit_id"]]
            hit["verdict"] = data
            words = VERDICT_WORDS.get(data["status"], data["status"])
            fragment = (
                str(m.progress_line(Markup("“{}”: {}").format(isolate(hit["surface"]), words)))
                + str(m.verdict_badge(hit, True))
                + str(m.verdict_detail(hit, True))
            )
            return [self._message("verdict", fragment, number)]
        renderers = {
            "targeting": m.targeting,
            "explanation": m.explanation,
            "decision": m.decision,
            "error": m.error_item,
            "done": m.done,
        }
        if kind in renderers:
            return [self._message(kind, str(renderers[kind](data)), number)]
        return []  # explanation-delta: the page shows the whole explanation when it is ready

    def _hits_message(self, number: int) -> ServerSentEvent:
        hits = list(self.hits.values())
        fragment = self.macros.hits_block(self.text, segments(self.text, hits), hits, self.language)
        return self._message("hit", str(fragment), number)

    @staticmethod
    def _message(name: str, html: str, number: int) -> ServerSentEvent:
        # an empty data field would be dropped by the browser; a space keeps the swap happening
        return ServerSentEvent(data=html.strip() or " ", event=name, id=str(number))
