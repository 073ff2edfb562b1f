"""Explanations: composed from vocabulary entries (no LLM), and checked for faithfulness.

The faithfulness guard holds every explanation, from a model or not, to the text: a quote must
occur in the text (a quote that differs only in case is repaired to the exact text), and every
vocabulary term the explanation names must be one of the hits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engine.events import Faithfulness
from engine.hits import Hit
from engine.matching.matcher import Matcher
from engine.parsing import QUOTE_RE

_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+")


def _short(description: str, sentences: int = 2) -> str:
    return " ".join(_SENTENCE_END.split(description.strip())[:sentences])


def _join(items: Sequence[str], and_word: str) -> str:
    items = list(dict.fromkeys(items))
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + and_word + items[-1]


def fresh_alternatives(note: str, terms: Sequence[str]) -> list[str]:
    """The suggested terms that a suggestion note does not already name.

    Notes often read "Say X, or Y." while the entry also lists X as an alternative; repeating it as
    "Instead, consider: X" tells the reader the same thing twice.
    """
    folded = note.casefold()
    return [term for term in dict.fromkeys(terms) if term.casefold() not in folded]


def vocabulary_explanation(hits: Sequence[Hit], templates: dict[str, Any], *, model_asked: bool = False) -> str:
    """One short paragraph per issue found: the term, whom it targets, why, what instead.

    With no hits the paragraph says why nothing more was checked: no model configured (`none`), or a
    model that was asked but failed or could not decide (`none_undecided`) — "without a language
    model" would be untrue then.
    """
    if not hits:
        return str(templates["none_undecided" if model_asked else "none"])
    names: dict[str, str] = templates["categories"]
    and_word = str(templates["and"])
    parts: list[str] = []
    seen: set[str] = set()
    for hit in hits:
        if hit.issue.id in seen:
            continue
        seen.add(hit.issue.id)
        issue = hit.issue
        groups = _join([names.get(c, c) for c in issue.categories], and_word)
        template = templates["hit_ambiguous"] if hit.ambiguous else templates["hit"]
        sentence = template.format(surface=hit.surface, groups=groups, description=_short(issue.description))
        if issue.suggestion_note:
            sentence += " " + templates["suggestion"].format(suggestion=issue.suggestion_note)
        alternatives = fresh_alternatives(issue.suggestion_note or "", issue.suggested_terms)
        if alternatives:
            sentence += " " + templates["alternatives"].format(alternatives=", ".join(alternatives))
        parts.append(sentence)
    return " ".join(parts)


@dataclass(frozen=True, slots=True)
class Checked:
    text: str
    faithfulness: Faithfulness
    problems: tuple[str, ...]
    cited_hits: tuple[str, ...]


def check_faithfulness(explanation: str, text: str, hits: Sequence[Hit], matcher: Matcher | None) -> Checked:
    problems: list[str] = []
    repaired = explanation
    folded_text = text.casefold()
    for match in QUOTE_RE.finditer(explanation):
        quote = next(g for g in match.groups() if g)
        if quote in text:
            continue
        at = folded_text.find(quote.casefold())
        if at >= 0 and len(quote.casefold()) == len(quote):
            repaired = repaired.replace(quote, text[at : at + len(quote)], 1)
        else:
            problems.append(f"quotes {quote[:40]!r}, which is not in the text")
    hit_issues = {h.issue.id for h in hits}
    if matcher is not None:
        for named in matcher.find(repaired):
            if named.issue.id not in hit_issues:
                problems.append(f"names the term {named.term.literal!r}, which was not found in the text")
    lowered = repaired.casefold()
    cited = tuple(h.id for h in hits if h.surface.casefold() in lowered or h.term.literal.casefold() in lowered)
    if problems:
        status: Faithfulness = "unfaithful"
    elif repaired != explanation:
        status = "repaired"
    else:
        status = "faithful"
    return Checked(repaired, status, tuple(problems), cited)
