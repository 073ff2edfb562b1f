"""The analysis event stream as HTML fragments for the htmx SSE extension.

Each engine event becomes one SSE message whose name is the event type and whose data is the
fragment for the element listening to it (see templates/_analysis.html). Hits are gathered until
all have arrived (the `analysis` event says how many) and sent as one fragment: the text with
every hit marked, the list of terms (each term once, with its count) and their popovers. A verdict
updates its hit's badge and popover, its term's badge and the running state out of band, and writes one
line into the page's live region.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from jinja2 import Environment
from markupsafe import Markup
from sse_starlette import ServerSentEvent

from engine.explain import fresh_alternatives
from engine.result import StoredEvent
from web.i18n import catalogue, lookup, plural_key, text

# Every word a reader sees comes from the request's language (web/i18n.py, web/locales/); moderator pages get English.


def _known(key: str) -> bool:
    return key in catalogue("en")


def category_words(category: str) -> str:
    """A category id as the pages say it ("sexual-orientation" -> "sexual orientation")."""
    key = f"cat.{category}"
    return lookup(key) if _known(key) else category.replace("-", " ")


def label_words(label: str) -> str:
    key = f"label.{label}"
    return lookup(key) if _known(key) else label


def in_words(stats: dict[str, Any]) -> dict[str, Any]:
    """A batch report's counts with categories and decisions named as the pages name them."""
    return {
        **stats,
        "categories": [(category_words(name), count) for name, count in stats["categories"]],
        "decisions": [(label_words(name), count) for name, count in stats["decisions"]],
    }


def isolate(value: object) -> Markup:
    """A curator's, user's or model's string, escaped, in its own bidi isolate (`<bdi>`, also `dir="auto"`):
    a right-to-left override (U+202E) or right-to-left words in it cannot reorder the page's text around it."""
    return Markup("<bdi>%s</bdi>") % value


def install_filters(env: Environment) -> None:
    env.filters["category"] = category_words
    env.filters["bdi"] = isolate
    env.filters["confidence_words"] = confidence_words
    env.filters["term_groups"] = term_groups
    env.filters["new_alternatives"] = lambda terms, note: fresh_alternatives(note or "", terms or ())
    env.filters["reader_reason"] = reader_reason
    env.filters["group_status"] = group_status
    env.filters["and_join"] = and_join
    env.globals["reader_undecided"] = READER_UNDECIDED  # English: the review pages' word for it


def and_join(items: Sequence[str]) -> str:
    """ "a, b and c": lists in sentences read as prose."""
    items = list(items)
    return ", ".join(items[:-1]) + lookup("and") + items[-1] if len(items) > 1 else "".join(items)


# What a confidence means to a reader; the number itself is offered on demand (a title), never as the headline,
# because it is the model's or the rules' own estimate, not a measured probability.
CONFIDENCE_BANDS = ((0.9, "confidence.very"), (0.75, "confidence.fairly"), (0.5, "confidence.not_very"))


def confidence_words(confidence: float) -> str:
    for floor, key in CONFIDENCE_BANDS:
        if confidence >= floor:
            return lookup(key)
    return lookup("confidence.unsure")


def term_groups(hits: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hits of the same vocabulary term as one group, in the order of their first occurrence.

    A long text that repeats two terms lists two terms with their counts rather than every occurrence.
    """
    groups: dict[str, dict[str, Any]] = {}
    for hit in hits:
        key = str(hit.get("issue_id") or hit["term"]).casefold()
        group = groups.setdefault(key, {"id": hit["id"], "first": hit, "hits": []})
        group["hits"].append(hit)
    for group in groups.values():
        group["count"] = len(group["hits"])
        group["surfaces"] = list(dict.fromkeys(h["surface"] for h in group["hits"]))
        group["neutral"] = all((h.get("verdict") or {}).get("status") == "neutral" for h in group["hits"])
    return list(groups.values())


def group_status(group: dict[str, Any]) -> tuple[str, str]:
    """One badge for a group: (css status, words), e.g. ("contentious", "offensive here") or mixed counts."""
    verdicts = [h.get("verdict") or {} for h in group["hits"]]
    # a use that is no attack (quoted, reported, reclaimed, historical) is said as the single badges say it
    uses = {v.get("use") or "attack" for v in verdicts}
    use = "" if len(uses) != 1 or "attack" in uses else " · " + text("badge.not_an_attack", use=_use_word(uses.pop()))
    statuses = [v.get("status", "pending") for v in verdicts]
    counts = dict.fromkeys(statuses, 0)
    for status in statuses:
        counts[status] += 1
    if len(counts) == 1:
        status = statuses[0]
        return status, verdict_words(status, "badge.pending") + use
    words = ", ".join(f"{n} {verdict_words(status, 'badge.being_checked')}" for status, n in counts.items())
    return "mixed", words + use


# Engine reasons (engine/decision.py) carry details for moderators: a parser's complaint, a threshold. Readers get
# what it means for them; the API and the review pages keep the reasons as they are.
READER_UNDECIDED = "The automatic check could not decide; a moderator will look."
# the engine counts occurrences: a text that repeats one term eight times has eight "uses"
_READER_REASONS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (re.compile(r"^(\d+) contentious term\(s\)$"), lambda m: _counted("reason.uses", int(m[1]))),
    (
        re.compile(r"^(\d+) (?:ambiguous )?term\(s\) could not be decided$"),
        lambda m: _counted("reason.undecided", int(m[1])),
    ),
    (re.compile(r"^the term-free check was undetermined"), lambda m: lookup("reason.targeting_undecided")),
    (re.compile(r"^deferred: confidence"), lambda m: lookup("reason.deferred")),
    (
        re.compile(r"^“(.+)” is read as used against people \((.+)\)$"),
        lambda m: text("reason.attack_cue", surface=m[1], cue=m[2]),
    ),
    (re.compile(r"^vocabulary-only mode"), lambda m: lookup("reason.vocabulary_only")),
    (
        re.compile(r"^no contentious term, and the term-free check found no attack$"),
        lambda m: lookup("reason.no_attack"),
    ),
)


def _counted(key: str, count: int) -> str:
    return text(plural_key(key, count), count=count)


def _use_word(use: str) -> str:
    return lookup(f"use.{use}") if _known(f"use.{use}") else use


def verdict_words(status: str, otherwise: str) -> str:
    """A verdict's badge words ("offensive here"); `otherwise` is the key for a verdict not yet known."""
    return lookup(f"badge.{status}") if status in ("contentious", "neutral", "undetermined") else lookup(otherwise)


def reader_reason(reason: str) -> str:
    for pattern, words in _READER_REASONS:
        match = pattern.search(reason)
        if match:
            return words(match)
    return reason


STAGES = ("terms", "context", "targeting", "explanation", "decision")


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
    """Stateful: one per SSE connection.

    Besides its own part of the page, each message updates the running state out of band: the stage it finishes
    (templates/_result.html, `stages`) and the page's live region (#announce), which is outside the streamed section
    so that it exists before anything is announced.
    """

    def __init__(self, env: Environment, text: str) -> None:
        self.macros: Any = env.get_template("_result.html").module
        self.text = text
        self.expected = -1
        self.language = ""
        self.models: list[str] = []
        self.hits: dict[str, dict[str, Any]] = {}
        self.failed_stages: set[str] = set()
        self.finished: set[str] = set()

    def __call__(self, number: int, event: StoredEvent) -> list[ServerSentEvent]:
        kind, data = event["type"], event["data"]
        m = self.macros
        if kind == "analysis":
            self.expected, self.language = data.get("hit_count", 0), data["language"]
            self.models = list(data.get("models", ()))
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
            words = verdict_words(data["status"], "badge.pending")
            group = next(g for g in term_groups(list(self.hits.values())) if hit in g["hits"])
            fragment = (
                str(m.verdict_badge(hit, True))
                + str(m.verdict_detail(hit, True))
                + str(m.group_badge(group, True))
                + self._context_stage()
                + str(m.announce(Markup("“{}”: {}").format(isolate(hit["surface"]), words)))
            )
            return [self._message("verdict", fragment, number)]
        if kind == "targeting":
            state = "skipped" if data["status"] == "skipped" else "done"
            return [self._message(kind, str(m.targeting(data)) + self._stage("targeting", state), number)]
        if kind == "explanation":
            fragment = str(m.explanation(data, list(self.hits.values()), self.language))
            fragment += self._stage("explanation", "done")
            return [self._message(kind, fragment, number)]
        if kind == "decision":
            label = label_words(data["label"])
            fragment = (
                str(m.decision(data, self.models))
                + self._stage("decision", "done", label)
                + str(m.announce(text("announce.decision", label=label)))
            )
            return [self._message(kind, fragment, number)]
        if kind == "error":
            # one line per failed stage: a model that is down fails every call the same way
            if data.get("stage") in self.failed_stages:
                return [self._message(kind, "", number)]
            self.failed_stages.add(data.get("stage", ""))
            return [self._message(kind, str(m.error_item(data)), number)]
        if kind == "done":
            # stages that sent nothing (an analysis cut short) stop saying "pending"
            left = [name for name in STAGES if name not in self.finished]
            fragment = str(m.done(data)) + "".join(self._stage(name, "skipped") for name in left)
            fragment += str(m.announce(lookup("announce.finished")))
            return [self._message(kind, fragment, number)]
        return []  # explanation-delta: the page shows the whole explanation when it is ready

    def _stage(self, name: str, state: str, detail: str = "") -> str:
        if state != "running":
            self.finished.add(name)
        return str(self.macros.stage(name, state, detail, True))

    def _context_stage(self) -> str:
        checked = sum(1 for hit in self.hits.values() if hit["verdict"] is not None)
        if checked < len(self.hits):
            return self._stage("context", "running", text("stage.checked_of", checked=checked, total=len(self.hits)))
        done = text("stage.checked", count=len(self.hits)) if self.hits else lookup("stage.nothing_to_check")
        return self._stage("context", "done", done)

    def _hits_message(self, number: int) -> ServerSentEvent:
        hits = list(self.hits.values())
        fragment = str(self.macros.hits_block(self.text, segments(self.text, hits), hits, self.language))
        terms = len(term_groups(hits))
        found = _counted("found", terms) if hits else lookup("found.none")
        said = _counted("announce", terms) if hits else lookup("announce.none")
        fragment += self._stage("terms", "done", found) + self._context_stage()
        fragment += str(self.macros.announce(said))
        return self._message("hit", fragment, number)

    @staticmethod
    def _message(name: str, html: str, number: int) -> ServerSentEvent:
        # an empty data field would be dropped by the browser; a space keeps the swap happening
        return ServerSentEvent(data=html.strip() or " ", event=name, id=str(number))
