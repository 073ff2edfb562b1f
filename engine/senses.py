"""Deciding an ambiguous hit from its vocabulary sense cues, without a language model.

Curators list context words that point to the neutral or the contentious sense. Both the cues
and the words around the hit go through the matcher's key maker (folded lemmas), so any
inflection counts. Only an unopposed signal decides; anything else stays undetermined.
"""

from __future__ import annotations

from engine.events import Verdict
from engine.hits import Hit
from engine.matching.matcher import Matcher

WINDOW = 8  # words on each side of the hit
NEUTRAL_CONFIDENCE = 0.65
CONTENTIOUS_CONFIDENCE = 0.7


def _keys(matcher: Matcher, words: list[str]) -> set[str]:
    make = matcher.index.key_maker
    return {key for word in words for key in make(word)}


def sense_cue_verdict(hit: Hit, text: str, matcher: Matcher) -> Verdict | None:
    cues = hit.term.sense_cues
    if not cues:
        return None
    tokens = matcher.tokenizer.tokenize(text)
    before = [t.text for t in tokens if t.end <= hit.start][-WINDOW:]
    after = [t.text for t in tokens if t.start >= hit.end][:WINDOW]
    context = _keys(matcher, before + after)
    neutral = sorted(_keys(matcher, list(cues.neutral)) & context)
    contentious = sorted(_keys(matcher, list(cues.contentious)) & context)
    if neutral and not contentious:
        return Verdict(
            hit.id,
            "neutral",
            NEUTRAL_CONFIDENCE,
            f"Context words point to a neutral sense ({', '.join(neutral)}).",
            "sense-cues",
        )
    if contentious and not neutral:
        return Verdict(
            hit.id,
            "contentious",
            CONTENTIOUS_CONFIDENCE,
            f"Context words point to the hurtful sense ({', '.join(contentious)}).",
            "sense-cues",
        )
    return None
