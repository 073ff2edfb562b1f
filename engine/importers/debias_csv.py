"""Import the DE-BIAS vocabulary from its CSV export (`<lang>_published_vocab.csv`).

Columns: uri, term, context, suggestion, source, disambiguation. How rows become our model:

- One DE-BIAS term per `uri`. The export repeats a term's row once per (source, suggestion,
  context) combination, so rows are grouped by `uri` wherever they appear in the file. Every
  `uri` carries exactly one `term`, so counting distinct `uri` and distinct `(uri, term)` gives
  the same number: 642 terms over the five published files.
- `context` is the contentious-issue description. DE-BIAS groups variants of one word (gender
  forms, spellings) under one contentious issue and the CSV repeats that issue's text on each of
  them, so terms whose set of contexts is identical become one issue with several terms. A term
  with several contexts (it belongs to several DE-BIAS issues) gets them joined.
- `suggestion` is attached to terms in DE-BIAS, and terms of one issue can differ; the issue's
  suggestion note names the terms a note is limited to (see `merge_suggestions`).
- `disambiguation` "1" marks an ambiguous term ("0" or empty: not ambiguous).
- `source` values (citations) become the issue's sources; the term keeps its DE-BIAS URI.
- The CSV has no URI for the contentious issue itself (the `c_*` concepts of the SKOS edition),
  so the issue keeps the default `urn:unerase:<lang>:<id>`; reusing a term URI would make the
  issue and its first term indistinguishable in the SKOS export.
- DE-BIAS CSV rows carry no identity categories, so every issue gets "other" rather than a
  category guessed from the text; the SKOS edition has them (see debias_skos).

The language comes from the caller, else from the file name prefix (`en_...`), else from the
suffix of the first term URI (`.../t_105_de`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from engine.errors import ImportFormatError
from engine.importers._common import (
    NO_DESCRIPTION,
    CsvRow,
    IdAllocator,
    check_language,
    clean,
    language_from_file_name,
    merge_suggestions,
    read_csv,
    require,
    unique,
)
from engine.vocabulary.model import Issue, Term, Vocabulary

COLUMNS = ("uri", "term", "context", "suggestion", "source", "disambiguation")
_AMBIGUOUS = {"1": True, "0": False, "": False, "true": True, "false": False}
_URI_LANGUAGE = re.compile(r"_([a-z]{2,3})/?$")


@dataclass
class _TermRows:
    """Everything the rows of one DE-BIAS term say about it."""

    uri: str
    literal: str
    ambiguous: bool
    line: int
    contexts: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)


def import_debias_csv(path: Path, language: str | None = None) -> Vocabulary:
    terms = _collect(path)
    if not terms:
        raise ImportFormatError(
            f"the file has a header but no rows; expected one row per term and source ({', '.join(COLUMNS)})",
            path=str(path),
        )
    lang = check_language(language or language_from_file_name(path) or _language_from_uri(terms, path), path)
    groups: dict[tuple[str, ...], list[_TermRows]] = {}
    for term in terms.values():
        groups.setdefault(tuple(unique(term.contexts)), []).append(term)
    ids = IdAllocator()
    issues = [_issue(members, lang, ids, path) for members in groups.values()]
    return Vocabulary(tuple(issues), name="debias")


def _collect(path: Path) -> dict[str, _TermRows]:
    terms: dict[str, _TermRows] = {}
    for row in read_csv(path, COLUMNS):
        uri = require(row, "uri", path)
        literal = require(row, "term", path)
        ambiguous = _ambiguous(row, path)
        term = terms.get(uri)
        if term is None:
            term = terms[uri] = _TermRows(uri, literal, ambiguous, row.line)
        elif term.literal != literal or term.ambiguous != ambiguous:
            raise ImportFormatError(
                f"the uri {uri} has the term '{literal}' (disambiguation {int(ambiguous)}) here but "
                f"'{term.literal}' (disambiguation {int(term.ambiguous)}) on line {term.line}; "
                "rows of one uri must agree on term and disambiguation",
                path=str(path),
                line=row.line,
            )
        term.contexts.append(clean(row.values["context"]))
        term.suggestions.append(clean(row.values["suggestion"]))
        term.sources.append(clean(row.values["source"]))
    return terms


def _ambiguous(row: CsvRow, path: Path) -> bool:
    value = row.values["disambiguation"].strip().lower()
    if value not in _AMBIGUOUS:
        raise ImportFormatError(
            f"disambiguation '{value}' is not understood; accepted: 1 (ambiguous), 0 or empty (not ambiguous)",
            path=str(path),
            line=row.line,
        )
    return _AMBIGUOUS[value]


def _language_from_uri(terms: dict[str, _TermRows], path: Path) -> str:
    first = next(iter(terms.values()))
    match = _URI_LANGUAGE.search(first.uri)
    if match is None:
        raise ImportFormatError(
            "cannot tell the language: the file name does not start with a language code (en_...) "
            f"and the uri {first.uri} does not end with one (_en); give the language explicitly",
            path=str(path),
            line=first.line,
        )
    return match.group(1)


def _issue(members: list[_TermRows], language: str, ids: IdAllocator, path: Path) -> Issue:
    first = members[0]
    issue_id = ids.allocate(f"debias-{language}", first.literal)
    seen: dict[str, _TermRows] = {}
    for member in members:
        if member.literal.casefold() in seen:
            raise ImportFormatError(
                f"the terms {seen[member.literal.casefold()].uri} and {member.uri} share the context "
                f"and the literal '{member.literal}'; give each term of an issue a distinct literal",
                path=str(path),
                line=member.line,
            )
        seen[member.literal.casefold()] = member
    return Issue(
        id=issue_id,
        language=language,
        uri=f"urn:unerase:{language}:{issue_id}",
        categories=("other",),
        description=" ".join(unique(first.contexts)) or NO_DESCRIPTION,
        terms=tuple(
            Term(
                id=f"{issue_id}#{m.literal}",
                literal=m.literal,
                language=language,
                issue_id=issue_id,
                ambiguous=m.ambiguous,
                uri=m.uri,
            )
            for m in members
        ),
        suggestion_note=merge_suggestions([(m.literal, m.suggestions) for m in members]),
        sources=unique(s for m in members for s in m.sources) or (first.uri,),
    )
