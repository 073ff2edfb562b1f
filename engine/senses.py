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
SPAN = 60 * WINDOW  # characters read on each side: more than 8 words, so a long text is never tokenized whole
NEUTRAL_CONFIDENCE = 0.65
CONTENTIOUS_CONFIDENCE = 0.7


def _keys(matcher: Matcher, words: list[str]) -> set[str]:
    return {key for word in words for key in matcher.word_keys(word)}


def sense_cue_verdict(hit: Hit, text: str, matcher: Matcher) -> Verdict | None:
    cues = hit.term.sense_cues
    if not cues:
        return None
    left, right = max(0, hit.start - SPAN), min(len(text), hit.end + SPAN)
    tokens = matcher.tokenizer.tokenize(text[left:right])
    start, end = hit.start - left, hit.end - left
    # a word cut by the span's edges is dropped: it lies beyond the window anyway
    before = [t.text for t in tokens if t.end <= start and (t.start > 0 or left == 0)][-WINDOW:]
    after = [t.text for t in tokens if t.start >= end and (t.end < right - left or right == len(text))][:WINDOW]
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
