"""Helpers shared by the importers: strict CSV reading, ids, text and language clean-up.

Every problem in an input file becomes an ImportFormatError that names the file, the line and
what is accepted, because the people running an import are curators, not programmers.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import ImportFormatError
from engine.vocabulary.loader import LANGUAGE_PATTERN

NO_DESCRIPTION = "No description in the source vocabulary."

# Greek has no ASCII decomposition; a readable transliteration keeps ids like
# "detoex-el-akaylos" reviewable instead of falling back to opaque hashes.
_GREEK = str.maketrans(
    {
        "α": "a",
        "β": "v",
        "γ": "g",
        "δ": "d",
        "ε": "e",
        "ζ": "z",
        "η": "i",
        "θ": "th",
        "ι": "i",
        "κ": "k",
        "λ": "l",
        "μ": "m",
        "ν": "n",
        "ξ": "x",
        "ο": "o",
        "π": "p",
        "ρ": "r",
        "σ": "s",
        "ς": "s",
        "τ": "t",
        "υ": "y",
        "φ": "f",
        "χ": "ch",
        "ψ": "ps",
        "ω": "o",
    }
)
_LANGUAGE_PREFIX = re.compile(r"^([a-z]{2,3})(?=[_.-])")


def clean(text: str | None) -> str:
    """Collapse runs of whitespace, as the YAML loader does, so imports round-trip exactly."""
    return " ".join((text or "").split())


def slugify(text: str) -> str:
    """ASCII slug from any literal: accents dropped, Greek transliterated, the rest hyphens."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    stripped = "".join(c for c in decomposed if not unicodedata.combining(c)).translate(_GREEK)
    return re.sub(r"[^a-z0-9]+", "-", stripped).strip("-")


class IdAllocator:
    """Hands out ids unique within one import by appending -2, -3, ... to repeats."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def allocate(self, prefix: str, literal: str) -> str:
        return self.claim(f"{prefix}-{slugify(literal) or 'term'}")

    def claim(self, base: str) -> str:
        """`base` itself when still free, else the first free `base-N`."""
        candidate, n = base, 1
        while candidate in self._used:
            n += 1
            candidate = f"{base}-{n}"
        self._used.add(candidate)
        return candidate


def unique(values: Iterable[str]) -> tuple[str, ...]:
    """Non-empty values in first-seen order, without repeats."""
    return tuple(dict.fromkeys(v for v in values if v))


def merge_suggestions(per_term: Sequence[tuple[str, Sequence[str]]]) -> str:
    """One issue-level note from per-term notes, naming the terms a note is limited to.

    The sources attach suggestion notes to terms, our model to issues: a note every term shares
    is kept as is, a note only some terms have is prefixed with those terms so no advice is
    silently applied to a term it was not written for.
    """
    applies: dict[str, list[str]] = {}
    for literal, notes in per_term:
        for note in unique(clean(n) for n in notes):
            applies.setdefault(note, []).append(literal)
    every = [literal for literal, _ in per_term]
    parts = []
    for note, literals in applies.items():
        if literals == every:
            parts.append(note)
        else:
            parts.append("For " + ", ".join(f"“{t}”" for t in literals) + ": " + note)
    return " ".join(parts)


def check_language(language: str, path: Path) -> str:
    if not LANGUAGE_PATTERN.match(language):
        raise ImportFormatError(
            f"language '{language}' is not a BCP-47 code; give one such as en, fr, el, de, nl, it",
            path=str(path),
        )
    return language


def language_from_file_name(path: Path) -> str | None:
    """`en_published_vocab.csv` -> "en"."""
    match = _LANGUAGE_PREFIX.match(path.name.lower())
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True)
class CsvRow:
    line: int
    values: dict[str, str]


def read_text(path: Path) -> str:
    """The file as text; non-UTF-8 bytes are reported with their line."""
    if not path.is_file():
        raise ImportFormatError("no such file; give the path of an existing file", path=str(path))
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ImportFormatError(
            f"the file is not UTF-8 (byte {exc.start} is 0x{data[exc.start]:02x}); save it as UTF-8",
            path=str(path),
            line=line,
        ) from exc


def read_csv(path: Path, required: Sequence[str]) -> Iterator[CsvRow]:
    """Rows of a comma-separated UTF-8 file with a header naming at least `required`."""
    text = read_text(path)
    expected = ", ".join(required)
    if not text.strip():
        raise ImportFormatError(
            f"the file is empty; expected a comma-separated header row with the columns {expected}",
            path=str(path),
            line=1,
        )
    # newline="" lets the csv module see quoted line breaks and count physical lines itself.
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        raw_header = next(reader)
        header = [clean(h).lower() for h in raw_header]
        missing = [c for c in required if c not in header]
        if missing:
            hint = ""
            if len(raw_header) == 1 and any(sep in raw_header[0] for sep in (";", "\t", "|")):
                hint = "columns must be separated by commas, not ';', tabs or '|'; "
            raise ImportFormatError(
                f"{hint}missing column(s) {', '.join(missing)} in the header {header!r}; "
                f"expected the columns {expected}",
                path=str(path),
                line=1,
            )
        while True:
            line = reader.line_num + 1
            try:
                fields = next(reader)
            except StopIteration:
                return
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(header):
                raise ImportFormatError(
                    f"the row has {len(fields)} fields but the header has {len(header)} ({expected}); "
                    "quote values that contain commas",
                    path=str(path),
                    line=line,
                )
            yield CsvRow(line, dict(zip(header, fields, strict=True)))
    except csv.Error as exc:
        raise ImportFormatError(
            f"not valid CSV ({exc}); expected comma-separated values with double quotes around "
            "values that contain commas, quotes or line breaks",
            path=str(path),
            line=reader.line_num or 1,
        ) from exc


def require(row: CsvRow, column: str, path: Path) -> str:
    value = clean(row.values[column])
    if not value:
        raise ImportFormatError(
            f"the column '{column}' is empty; every row needs a value there", path=str(path), line=row.line
        )
    return value
