"""The vocabulary model (SKOS-inspired): one issue explains a family of terms.

See docs/vocabulary-format.md for the file format and docs/contracts.md for the contract.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

FORMAT = "unerase-vocabulary/1"

CATEGORIES: tuple[str, ...] = (
    "gender",
    "sexual-orientation",
    "race",
    "ethnicity",
    "religion",
    "political-affiliation",
    "socioeconomic-status",
    "occupation",
    "age",
    "disability",
    "addiction",
    "physical-appearance",
    "migration-colonial-past",
    "other",
)


@dataclass(frozen=True, slots=True)
class SenseCues:
    """Context words that point to the neutral or the contentious sense of a term."""

    neutral: tuple[str, ...] = ()
    contentious: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.neutral or self.contentious)


@dataclass(frozen=True, slots=True)
class Term:
    """One surface form curators list for an issue."""

    id: str
    literal: str
    language: str
    issue_id: str
    ambiguous: bool = False
    sense_cues: SenseCues = field(default_factory=SenseCues)
    uri: str | None = None
    # only this spelling and words that begin with it (sapata, sapatas), never other words of its lemma: the
    # dictionary gives Portuguese "sapata" the lemma "sapato" (a shoe)
    exact: bool = False


@dataclass(frozen=True, slots=True)
class Issue:
    """Why a family of terms is contentious, whom it targets and what to say instead."""

    id: str
    language: str
    uri: str
    categories: tuple[str, ...]
    description: str
    terms: tuple[Term, ...]
    suggestion_note: str = ""
    suggested_terms: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class Vocabulary:
    """Issues of one or more languages, with a content hash as version."""

    issues: tuple[Issue, ...]
    name: str = "vocabulary"

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {issue.id: issue for issue in self.issues})

    @property
    def version(self) -> str:
        """SHA-256 (first 16 hex digits) over the canonical content, not the formatting."""
        cached: str | None = self.__dict__.get("_version")
        if cached is None:
            payload = json.dumps(
                [issue_to_dict(issue) for issue in sorted(self.issues, key=lambda i: (i.language, i.id))],
                ensure_ascii=False,
                sort_keys=True,
                separators=(",", ":"),
            )
            cached = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
            object.__setattr__(self, "_version", cached)
        return cached

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(sorted({issue.language for issue in self.issues}))

    def issue(self, issue_id: str) -> Issue:
        by_id: dict[str, Issue] = self.__dict__["_by_id"]
        return by_id[issue_id]

    def terms(self, language: str | None = None) -> Iterator[Term]:
        for issue in self.issues:
            if language is None or issue.language == language:
                yield from issue.terms

    def for_language(self, language: str) -> Vocabulary:
        return Vocabulary(tuple(i for i in self.issues if i.language == language), name=self.name)

    @classmethod
    def merge(cls, vocabularies: Sequence[Vocabulary], name: str | None = None) -> Vocabulary:
        issues: list[Issue] = []
        for vocabulary in vocabularies:
            issues.extend(vocabulary.issues)
        return cls(tuple(issues), name=name or "+".join(v.name for v in vocabularies))


def term_to_dict(term: Term) -> dict[str, object]:
    data: dict[str, object] = {"id": term.id, "literal": term.literal, "ambiguous": term.ambiguous}
    if term.sense_cues:
        data["sense_cues"] = {
            "neutral": list(term.sense_cues.neutral),
            "contentious": list(term.sense_cues.contentious),
        }
    if term.uri:
        data["uri"] = term.uri
    if term.exact:
        data["exact"] = True
    return data


def issue_to_dict(issue: Issue) -> dict[str, object]:
    return {
        "id": issue.id,
        "language": issue.language,
        "uri": issue.uri,
        "categories": list(issue.categories),
        "description": issue.description,
        "suggestion_note": issue.suggestion_note,
        "suggested_terms": list(issue.suggested_terms),
        "sources": list(issue.sources),
        "terms": [term_to_dict(t) for t in issue.terms],
    }
