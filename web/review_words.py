"""The review queue's reasons in the page's language.

`web.review` writes an item's reasons as English sentences (the API and the log keep them so). The ones it writes
itself — why an item is in the queue — are said again here in the moderator's language; the engine's own reasons
("1 ambiguous term(s) could not be decided") are details from the code and stay English (docs/i18n.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from markupsafe import Markup, escape

from web.i18n import label_words, lookup

_SENTENCES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], Markup]], ...] = (
    (re.compile(r"^deferred$"), lambda m: _said("queue.deferred")),
    (
        re.compile(r"^deferred by the site's threshold: confidence (\d+(?:\.\d+)?)$"),
        lambda m: _said("queue.threshold", confidence=m[1]),
    ),
    (re.compile(r"^disputed by a reader: \(no comment\)$"), lambda m: _said("queue.disputed_silently")),
    (re.compile(r"^disputed by a reader: (.*)$", re.DOTALL), lambda m: _said("queue.disputed", comment=m[1])),
    (
        re.compile(r"^spot check: an automatic “(.+)” drawn at random$"),
        lambda m: _said("queue.spot_check", label=label_words(m[1].replace(" ", "_"))),
    ),
)


def _said(key: str, **params: Any) -> Markup:
    words = Markup(escape(lookup(key)))
    return words.format(**params) if params else words


def queue_reason(reason: str) -> Markup | None:
    """The reason in the page's language, or None for a reason the engine wrote (shown as it is, marked English)."""
    for pattern, words in _SENTENCES:
        match = pattern.match(reason)
        if match:
            return words(match)
    return None


def install(env: Any) -> None:
    env.filters["queue_reason"] = queue_reason
