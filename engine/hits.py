"""What the vocabulary pipeline reports for one match in a text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.vocabulary.model import Issue, Term


@dataclass(frozen=True, slots=True)
class Hit:
    """One match of a vocabulary term, with exact offsets into the original text.

    `text[start:end] == surface` always holds. `obfuscated` is true when the match was found
    through leetspeak, separators, masking or repeated letters. When masking leaves several
    terms possible, `candidates` lists their literals (the reported `term` is the first).
    `variant` is true when the surface is none of the listed forms nor an inflection of one,
    but a spelling within one edit of a long listed form (transexual for transsexual) or a
    listed form hyphenated or closed up differently (Muzul-Vrouw for muzulvrouw).
    """

    id: str
    start: int
    end: int
    surface: str
    term: Term
    issue: Issue
    obfuscated: bool = False
    candidates: tuple[str, ...] = ()
    marked_ambiguous: bool = False  # a site's moderators marked the term ambiguous (engine.scope)
    variant: bool = False  # a spelling or hyphenation variant of a listed form (transexual, Muzul-Vrouw)

    @property
    def ambiguous(self) -> bool:
        return self.term.ambiguous or self.marked_ambiguous

    def to_dict(self, *, full: bool = True) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "start": self.start,
            "end": self.end,
            "surface": self.surface,
            "term": self.term.literal,
            "term_id": self.term.id,
            "issue_id": self.issue.id,
            "uri": self.term.uri or self.issue.uri,
            "language": self.term.language,
            "categories": list(self.issue.categories),
            "ambiguous": self.ambiguous,
            "obfuscated": self.obfuscated,
        }
        if self.candidates:
            data["candidates"] = list(self.candidates)
        if self.variant:
            data["variant"] = True
        if full:
            data.update(
                description=self.issue.description,
                suggestion_note=self.issue.suggestion_note,
                suggested_terms=list(self.issue.suggested_terms),
                sources=list(self.issue.sources),
            )
        return data
