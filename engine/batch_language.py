"""The language a batch record is analysed in when its own words cannot tell.

Catalogue titles ("The Idiot Boy", "Head of a Moor") are too short for detection: every word of them exists
in several languages, so detection ties and refuses. One analysis at a time, refusing is right (the person can
say the language and try again); in a batch of thousands it leaves an archivist with dozens of failed rows
and nothing to do about them. So a record that gives no language, in a job that gives none, whose language
detection cannot tell, is analysed in a fallback language instead, and its result says so and why. The CLI
(`unerase batch`) and the web app's batch jobs both go through `analyse_record`, so they agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.analysis import Analyzer
from engine.errors import LanguageNotDetected
from engine.events import Event

PREFERRED_FALLBACK = "en"


@dataclass(frozen=True, slots=True)
class LanguageFallback:
    """The language a record was analysed in for want of a detected one, and what detection said."""

    language: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"language": self.language, "reason": self.reason}


def default_fallback(languages: Sequence[str]) -> str | None:
    """English when it is loaded (the commonest language of catalogues), else the first loaded language."""
    if PREFERRED_FALLBACK in languages:
        return PREFERRED_FALLBACK
    return languages[0] if languages else None


async def analyse_record(
    analyzer: Analyzer, text: str, language: str | None, mode: str | None, fallback: str | None
) -> tuple[list[Event], LanguageFallback | None]:
    """The analysis events, in `language` when given; else detected, or in `fallback` when detection cannot
    tell (then the second value says so). Without a fallback, an unclear language raises as before."""
    try:
        return [event async for event in analyzer.analyze(text, language, mode)], None
    except LanguageNotDetected as exc:
        if language is not None or not fallback:
            raise
        # detection refuses before the analysis yields anything, so nothing is analysed twice
        events = [event async for event in analyzer.analyze(text, fallback, mode)]
        return events, LanguageFallback(fallback, exc.message)


def noted(result: dict[str, Any], fallback: LanguageFallback | None) -> dict[str, Any]:
    """The result with a "language_fallback" entry when the language was not detected but assumed."""
    return result if fallback is None else {**result, "language_fallback": fallback.to_dict()}
