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
# characters read on each side at first: 8 ordinary words fit; a side that holds fewer than WINDOW words is read
# again with twice the span, until it reaches the text's edge (long compounds). Tokenizing the whole text for
# every ambiguous hit was the largest single cost of a vocabulary-only analysis.
SPAN = 20 * WINDOW
NEUTRAL_CONFIDENCE = 0.65
CONTENTIOUS_CONFIDENCE = 0.7


def _keys(matcher: Matcher, words: list[str]) -> set[str]:
    return {key for word in words for key in matcher.word_keys(word)}


def _window(hit: Hit, text: str, matcher: Matcher) -> list[str]:
    """The WINDOW words on each side of the hit."""
    span = SPAN
    while True:
        left, right = max(0, hit.start - span), min(len(text), hit.end + span)
        tokens = matcher.tokenizer.tokenize(text[left:right])
        start, end = hit.start - left, hit.end - left
        # a word cut by the span's edges is dropped: it lies beyond the window anyway
        before = [t.text for t in tokens if t.end <= start and (t.start > 0 or left == 0)][-WINDOW:]
        after = [t.text for t in tokens if t.start >= end and (t.end < right - left or right == len(text))][:WINDOW]
        short = (len(before) < WINDOW and left > 0) or (len(after) < WINDOW and right < len(text))
        if not short:
            return before + after
        span *= 2


def sense_cue_verdict(hit: Hit, text: str, matcher: Matcher) -> Verdict | None:
    cues = hit.term.sense_cues
    if not cues:
        return None
    context = _keys(matcher, _window(hit, text, matcher))
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
