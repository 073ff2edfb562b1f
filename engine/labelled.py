"""Reading a labelled sample (CSV or JSONL) for `unerase eval`.

A labelled file is a person's answer key: every row has a text and the label a moderator gave it, and
optionally its language, a group to break results down by, and the terms (or character spans) that
are used contentiously in it. Unlike a batch upload, a labelled file is refused as a whole at the first
bad row: a figure computed over a silently shortened answer key would look exact and be wrong. Every
error names the file, the line and the column, and says what is accepted.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import UneraseError
from engine.jsonlines import UnreadableLine, parse_line

_BOM = "\ufeff"
_DELIMITERS = ",;\t"
_SURROGATE = re.compile("[\ud800-\udfff]")
DEFAULT_POSITIVE = ("1", "true", "yes", "hateful")
DEFAULT_NEGATIVE = ("0", "false", "no", "not_hateful")


class LabelledFileError(UneraseError):
    """The labelled file cannot be used as it is; the message names file, line and column."""

    status = 422
    code = "invalid-labelled-file"


@dataclass(frozen=True)
class Columns:
    """Which columns (CSV header names or JSONL keys) hold what."""

    text: str = "text"
    label: str = "label"
    lang: str | None = None
    group: str | None = None
    terms: str | None = None  # the terms used contentiously in the text, separated by ';'
    spans: str | None = None  # the character spans used contentiously, 'start-end' separated by ';'


@dataclass(frozen=True)
class Labels:
    """Which label values mean hateful/contentious (positive) and which mean acceptable (negative).

    With `negative` empty every non-empty value that is not positive counts as negative."""

    positive: tuple[str, ...] = DEFAULT_POSITIVE
    negative: tuple[str, ...] = DEFAULT_NEGATIVE

    def __post_init__(self) -> None:
        object.__setattr__(self, "positive", tuple(v.strip().casefold() for v in self.positive if v.strip()))
        object.__setattr__(self, "negative", tuple(v.strip().casefold() for v in self.negative if v.strip()))
        both = set(self.positive) & set(self.negative)
        if not self.positive:
            raise UneraseError("--positive needs at least one label value, e.g. --positive hateful,offensive")
        if both:
            raise UneraseError(f"label value(s) {', '.join(sorted(both))} are given as both positive and negative")

    def read(self, value: str) -> bool | None:
        """True for positive, False for negative, None for a value that is neither."""
        key = value.strip().casefold()
        if key in self.positive:
            return True
        if key in self.negative or (not self.negative and key):
            return False
        return None

    def accepted(self) -> str:
        negative = ", ".join(self.negative) if self.negative else "any other non-empty value"
        return f"positive: {', '.join(self.positive)}; negative: {negative}"


@dataclass(frozen=True)
class LabelledRow:
    line: int
    text: str
    positive: bool
    lang: str | None = None
    group: str | None = None
    terms: tuple[str, ...] | None = None  # None: the row gives no term labels
    spans: tuple[tuple[int, int], ...] | None = None


def read_labelled(path: str | Path, columns: Columns, labels: Labels, *, max_rows: int = 200_000) -> list[LabelledRow]:
    """Every row of the file, or a LabelledFileError naming the first problem."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise LabelledFileError(f"cannot read {name!r}: {exc.strerror or exc}") from None
    return parse_labelled(data, name, columns, labels, max_rows=max_rows)


def parse_labelled(
    data: bytes, name: str, columns: Columns, labels: Labels, *, max_rows: int = 200_000
) -> list[LabelledRow]:
    text = _decode(data, name)
    if not text.strip():
        raise LabelledFileError(
            f"{name}: line 1: the file is empty; expected a header row naming the columns "
            f"{columns.text!r} and {columns.label!r} (CSV) or one JSON object per line (JSONL)"
        )
    jsonl = name.lower().endswith((".jsonl", ".ndjson")) or (
        not name.lower().endswith((".csv", ".tsv")) and text.lstrip().startswith("{")
    )
    rows = _jsonl(text, name, columns, labels) if jsonl else _csv(text, name, columns, labels)
    result = []
    for row in rows:
        result.append(row)
        if len(result) > max_rows:
            raise LabelledFileError(f"{name}: more than {max_rows:,} rows; split the file")
    if not result:
        raise LabelledFileError(f"{name}: line 2: the file has a header but no rows to evaluate")
    return result


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8").removeprefix(_BOM)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        # the column counts characters, as an editor shows them, up to the bad byte
        column = len(data[line_start : exc.start].decode("utf-8", errors="replace")) + 1
        raise LabelledFileError(
            f"{name}: line {line}, column {column}: byte 0x{data[exc.start]:02x} is not valid UTF-8; "
            "save the file as UTF-8 and try again"
        ) from None


def _cell_row(
    name: str,
    line: int,
    columns: Columns,
    labels: Labels,
    get: dict[str, str],
) -> LabelledRow:
    def where(column: str) -> str:
        return f"{name}: line {line}, column {column!r}"

    text = get.get(columns.text, "")
    if not text.strip():
        raise LabelledFileError(f"{where(columns.text)}: the text is empty; every row needs a text")
    raw_label = get.get(columns.label, "")
    positive = labels.read(raw_label)
    if positive is None:
        raise LabelledFileError(
            f"{where(columns.label)}: the label {raw_label!r} is not known; accepted ({labels.accepted()}); "
            "choose them with --positive and --negative"
        )
    terms = spans = None
    if columns.terms is not None:
        terms = tuple(t.strip() for t in get.get(columns.terms, "").split(";") if t.strip())
    if columns.spans is not None:
        read = (_span(part, len(text), where(columns.spans)) for part in get.get(columns.spans, "").split(";"))
        spans = tuple(s for s in read if s is not None)

    def optional(column: str | None) -> str | None:
        return (get.get(column, "").strip() or None) if column else None

    return LabelledRow(line, text, positive, optional(columns.lang), optional(columns.group), terms, spans)


def _span(part: str, length: int, where: str) -> tuple[int, int] | None:
    if not part.strip():
        return None
    try:
        start_text, end_text = part.strip().split("-", 1)
        start, end = int(start_text), int(end_text)
    except ValueError:
        raise LabelledFileError(
            f"{where}: {part.strip()!r} is not a span; write character offsets as start-end, e.g. 10-16"
        ) from None
    if not 0 <= start < end <= length:
        raise LabelledFileError(f"{where}: span {start}-{end} is outside the text, which has {length} characters")
    return start, end


# --- CSV ---------------------------------------------------------------------------------------------


def _delimiter(header: str) -> str:
    present = [d for d in _DELIMITERS if d in header]
    return present[0] if len(present) == 1 else ","


def _csv(text: str, name: str, columns: Columns, labels: Labels) -> Iterator[LabelledRow]:
    header_line = text.split("\n", 1)[0]
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(header_line))
    start = 1
    header: list[str] | None = None
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise LabelledFileError(f"{name}: line {start}: cannot read the CSV row ({exc})") from None
        line, start = start, reader.line_num + 1
        if not any(cell.strip() for cell in row):
            continue
        if header is None:
            header = [cell.strip() for cell in row]
            _check_columns(header, columns, name)
            continue
        if len(row) > len(header) and any(cell.strip() for cell in row[len(header) :]):
            raise LabelledFileError(
                f"{name}: line {line}, column {len(header) + 1}: the row has {len(row)} cells but the header has "
                f"{len(header)}; quote cells that contain the delimiter"
            )
        by_name = {key.casefold(): value for key, value in zip(header, row, strict=False)}
        yield _cell_row(name, line, _folded(columns), labels, by_name)


def _folded(columns: Columns) -> Columns:
    def fold(value: str | None) -> str | None:
        return value.strip().casefold() if value else value

    return Columns(
        columns.text.strip().casefold(),
        columns.label.strip().casefold(),
        fold(columns.lang),
        fold(columns.group),
        fold(columns.terms),
        fold(columns.spans),
    )


def _wanted(columns: Columns) -> list[tuple[str, str]]:
    pairs = [
        ("texts", columns.text),
        ("labels", columns.label),
        ("languages", columns.lang),
        ("groups", columns.group),
        ("term labels", columns.terms),
        ("span labels", columns.spans),
    ]
    return [(role, column) for role, column in pairs if column]


def _check_columns(header: Sequence[str], columns: Columns, name: str) -> None:
    present = {h.casefold() for h in header}
    for role, column in _wanted(columns):
        if column.strip().casefold() not in present:
            found = ", ".join(repr(h) for h in header)
            raise LabelledFileError(
                f"{name}: line 1, column {column!r}: the header has no such column for the {role}; "
                f"columns found: {found}"
            )


# --- JSONL -------------------------------------------------------------------------------------------


def _jsonl(text: str, name: str, columns: Columns, labels: Labels) -> Iterator[LabelledRow]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            value = parse_line(line)
        except UnreadableLine as exc:
            where = "" if exc.column is None else f", column {exc.column}"
            raise LabelledFileError(
                f"{name}: line {number}{where}: {exc.reason}; expected one object per line"
            ) from None
        if not isinstance(value, dict):
            raise LabelledFileError(f"{name}: line {number}, column 1: expected a JSON object")
        for role, column in _wanted(columns):
            required = column in (columns.text, columns.label)
            if required and column not in value:
                raise LabelledFileError(
                    f"{name}: line {number}, column {column!r}: the object has no key {column!r} for the {role}; "
                    f"keys found: {', '.join(repr(k) for k in value)}"
                )
        cells = {k: _as_text(v) for k, v in value.items()}
        for column, cell in cells.items():  # JSON may escape half a surrogate pair alone; no database stores it
            if (surrogate := _SURROGATE.search(cell)) is not None:
                raise LabelledFileError(
                    f"{name}: line {number}, column {column!r}: holds a lone UTF-16 surrogate "
                    f"(U+{ord(surrogate.group()):04X}), which is not a character; give valid Unicode text"
                )
        yield _cell_row(name, number, columns, labels, cells)


def _as_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        if len(value) == 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return f"{value[0]}-{value[1]}"  # one span given as [start, end]
        return ";".join(_as_text(v) for v in value)
    return str(value)
