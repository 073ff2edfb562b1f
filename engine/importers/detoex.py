"""Import the DETOEX ("Explain the Flag") vocabularies of inherently derogatory terms.

Two distributions are accepted:

- CSV (`<lang>_vocabulary.csv`): columns term, lemmas, description, categories, source. One row
  is one entry; it becomes one issue with one term (DETOEX has no synonym grouping). `lemmas`
  is the original system's lemma sequence; unerase lemmatizes terms itself at load time, so the
  column is required but not kept. `categories` is ';'-separated and may be empty ("other").
- The original pickle (`<lang>_vocab_processed.pickle`). Its shape, read from the matcher in
  the ails-lab/detoex repository (`detoex/api_modules/matching_module.py`, `find_matches`), is
  `dict[first_lemma, list[entry]]` where an entry is a list `[lemma_1, ..., lemma_n, info]` and
  `info` is `(literal, uri, description, categories)`; the uri is the Wiktionary page, which the
  CSV calls `source`. Other plausible shapes are accepted too: a list of such entries, a list of
  dicts with keys term/description/categories/source, or a dict term -> such a dict.

A pickle can run any code while it loads, so the pickle is read with an unpickler whose
`find_class` refuses every global: plain lists, tuples, dicts, strings and numbers load; any
pickle naming a class or function (os.system, builtins.eval, collections.OrderedDict, ...) is
refused before anything of it runs. Issues get ids `detoex-<lang>-<slug>`, repeats -2, -3.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from engine.errors import ImportFormatError
from engine.importers._common import (
    NO_DESCRIPTION,
    IdAllocator,
    check_language,
    clean,
    language_from_file_name,
    read_csv,
    require,
    unique,
)
from engine.vocabulary.model import CATEGORIES, Issue, Term, Vocabulary

COLUMNS = ("term", "lemmas", "description", "categories", "source")

# DETOEX labels -> our ids. "Public Institutions" (police, state bodies) has no identity
# characteristic of its own in our list, so it maps to "other" on purpose, not by default.
CATEGORY_MAP: dict[str, str] = {
    "gender": "gender",
    "sexual orientation": "sexual-orientation",
    "race": "race",
    "ethnicity": "ethnicity",
    "religion": "religion",
    "political affiliation": "political-affiliation",
    "socioeconomic": "socioeconomic-status",
    "socioeconomic status": "socioeconomic-status",
    "occupation": "occupation",
    "age": "age",
    "disability": "disability",
    "addiction": "addiction",
    "physical appearance": "physical-appearance",
    "migration": "migration-colonial-past",
    "colonial past": "migration-colonial-past",
    "public institutions": "other",
    "other": "other",
} | {c.replace("-", " "): c for c in CATEGORIES}


@dataclass(frozen=True, slots=True)
class Entry:
    """One DETOEX entry, whatever distribution it came from."""

    literal: str
    description: str
    categories: tuple[str, ...]
    source: str


def map_categories(raw: Iterable[str], path: Path, line: int | None) -> tuple[str, ...]:
    mapped = []
    for value in raw:
        label = clean(value.replace("_", " ").replace("-", " ")).casefold()
        if not label:
            continue
        if label not in CATEGORY_MAP:
            accepted = sorted({k.title() for k in CATEGORY_MAP} | set(CATEGORIES))
            raise ImportFormatError(
                f"unknown category '{clean(value)}'; accepted: {', '.join(accepted)}",
                path=str(path),
                line=line,
            )
        mapped.append(CATEGORY_MAP[label])
    return unique(mapped) or ("other",)


def import_detoex_csv(path: Path, language: str | None = None) -> Vocabulary:
    entries = [
        Entry(
            literal=require(row, "term", path),
            description=clean(row.values["description"]),
            categories=map_categories(row.values["categories"].split(";"), path, row.line),
            source=clean(row.values["source"]),
        )
        for row in read_csv(path, COLUMNS)
    ]
    return _vocabulary(entries, path, language)


def import_detoex_pickle(path: Path, language: str | None = None) -> Vocabulary:
    if not path.is_file():
        raise ImportFormatError("no such file; give the path of an existing file", path=str(path))
    data = path.read_bytes()
    try:
        obj = _PlainDataUnpickler(io.BytesIO(data)).load()
    except ImportFormatError as exc:
        raise ImportFormatError(exc.reason, path=str(path)) from None
    except Exception as exc:  # a broken pickle can fail in many ways; all mean "not a pickle"
        raise ImportFormatError(
            f"not a readable pickle ({type(exc).__name__}: {exc}); expected the DETOEX "
            "<lang>_vocab_processed.pickle or a pickle of plain lists/dicts of entries",
            path=str(path),
        ) from None
    return _vocabulary(list(_pickle_entries(obj, path)), path, language)


class _PlainDataUnpickler(pickle.Unpickler):
    """Loads only builtin containers and scalars: every global lookup is refused."""

    def find_class(self, module: str, name: str) -> type:
        raise ImportFormatError(
            f"the pickle refers to {module}.{name}; only plain lists, tuples, dicts, strings and "
            "numbers are accepted, so it was not loaded (a pickle naming classes can run code)"
        )


def _pickle_entries(obj: object, path: Path) -> Iterator[Entry]:
    if isinstance(obj, dict):
        values = list(obj.values())
        if all(isinstance(v, list) and all(isinstance(e, (list, tuple)) for e in v) for v in values):
            # The DETOEX layout: first lemma -> lemmatized entries starting with that lemma.
            for bucket in values:
                for entry in bucket:
                    yield _from_sequence(entry, path)
            return
        for key, value in obj.items():
            if isinstance(value, dict):
                yield _from_mapping({"term": key, **value}, path)
            else:
                raise _shape_error(path, f"the value of '{key}' is a {type(value).__name__}")
        return
    if isinstance(obj, (list, tuple)):
        for item in obj:
            if isinstance(item, dict):
                yield _from_mapping(item, path)
            elif isinstance(item, (list, tuple)):
                yield _from_sequence(item, path)
            else:
                raise _shape_error(path, f"an item is a {type(item).__name__}")
        return
    raise _shape_error(path, f"the pickle holds a {type(obj).__name__}")


def _shape_error(path: Path, what: str) -> ImportFormatError:
    return ImportFormatError(
        f"{what}; accepted shapes: the DETOEX dict first-lemma -> [[lemma, ..., (term, uri, "
        "description, categories)]], a list of such entries, a list of dicts with keys "
        "term/description/categories/source, or a dict term -> such a dict",
        path=str(path),
    )


def _from_sequence(entry: object, path: Path) -> Entry:
    if not isinstance(entry, (list, tuple)) or not entry or not isinstance(entry[-1], (list, tuple)):
        raise _shape_error(path, f"the entry {entry!r:.80} does not end with (term, uri, description, categories)")
    info = entry[-1]
    if len(info) < 3:
        raise _shape_error(path, f"the entry info {info!r:.80} has fewer than 3 fields")
    categories = info[3] if len(info) > 3 else None
    return _from_mapping({"term": info[0], "source": info[1], "description": info[2], "categories": categories}, path)


def _from_mapping(item: dict[object, object], path: Path) -> Entry:
    literal = clean(_text(item.get("term") or item.get("literal")))
    if not literal:
        raise _shape_error(path, f"the entry {item!r:.80} has no term")
    raw = item.get("categories")
    categories: list[str] = []
    if isinstance(raw, str):
        categories = raw.split(";")
    elif isinstance(raw, (list, tuple, set, frozenset)):
        categories = [_text(c) for c in raw]
    elif raw is not None:
        raise _shape_error(path, f"the categories of '{literal}' are a {type(raw).__name__}")
    return Entry(
        literal=literal,
        description=clean(_text(item.get("description"))),
        categories=map_categories(categories, path, None),
        source=clean(_text(item.get("source") or item.get("uri"))),
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _language(entries: list[Entry], path: Path, language: str | None) -> str:
    if language or (language := language_from_file_name(path)):
        return check_language(language, path)
    for entry in entries:
        host = urlparse(entry.source).hostname or ""
        if host.endswith(".wiktionary.org"):
            return check_language(host.split(".")[0], path)
    raise ImportFormatError(
        "cannot tell the language: the file name does not start with a language code (en_...) and "
        "no source is a <lang>.wiktionary.org page; give the language explicitly",
        path=str(path),
    )


def _vocabulary(entries: list[Entry], path: Path, language: str | None) -> Vocabulary:
    if not entries:
        raise ImportFormatError("the file holds no entries; expected at least one term", path=str(path))
    lang = _language(entries, path, language)
    ids = IdAllocator()
    issues = []
    for entry in entries:
        issue_id = ids.allocate(f"detoex-{lang}", entry.literal)
        issues.append(
            Issue(
                id=issue_id,
                language=lang,
                uri=f"urn:unerase:{lang}:{issue_id}",
                categories=entry.categories,
                description=entry.description or NO_DESCRIPTION,
                terms=(
                    Term(
                        id=f"{issue_id}#{entry.literal}",
                        literal=entry.literal,
                        language=lang,
                        issue_id=issue_id,
                        uri=entry.source or None,
                    ),
                ),
                sources=(entry.source or f"DETOEX vocabulary file {path.name}",),
            )
        )
    return Vocabulary(tuple(issues), name="detoex")
