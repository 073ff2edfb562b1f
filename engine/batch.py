"""Batch input and output: turn an uploaded CSV, JSONL or ZIP-of-.txt file into records, and results into files.

The module is framework-free so the CLI (`unerase batch`) and the web app's batch jobs share it.

Reading is defensive because the bytes come from strangers: sizes are checked before anything is
decoded or unpacked, ZIP headers are checked for bombs before any member is read, member names that
could escape a folder are refused, and bytes that are not UTF-8 give a message with the line and
offset instead of a UnicodeDecodeError. Every whole-file problem is raised by `read_records` itself,
before the first item is produced, so a caller can reject an upload at once; problems with single
rows are yielded in order as `RowError`s and the rest of the file is still read.

Writing neutralises spreadsheet formulas in every CSV cell, because exported texts are exactly the
kind of untrusted content a spreadsheet would otherwise execute.
"""

from __future__ import annotations

import csv
import io
import json
import re
import stat
import zipfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any, Literal

from engine.errors import UneraseError
from engine.jsonlines import UnreadableLine, parse_line
from engine.result import language_of

Format = Literal["csv", "jsonl", "zip"]
FORMATS: tuple[Format, ...] = ("csv", "jsonl", "zip")

_EXTENSIONS: dict[str, Format] = {".csv": "csv", ".tsv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".zip": "zip"}
_ACCEPTED = "csv (.csv), jsonl (.jsonl, .ndjson) or a zip of .txt files (.zip)"
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header, or the end record of an empty archive
_BOM = b"\xef\xbb\xbf"
_SNIFF_CHARS = 65_536
_DELIMITERS = ",;\t"
_SURROGATE = re.compile("[\ud800-\udfff]")
# Highly compressible small members (a page of spaces) are harmless; the ratio only matters once it can hurt.
_RATIO_FLOOR = 1_000_000


@dataclass(frozen=True, slots=True)
class Record:
    """One text to analyse, with where it came from so results and errors can point back to it."""

    line: int  # CSV: physical line where the record starts; JSONL: its line; ZIP: 1-based member index
    id: str
    text: str
    lang: str | None = None


@dataclass(frozen=True, slots=True)
class RowError:
    """A record that cannot be analysed; the message says what was wrong and what is accepted."""

    line: int
    message: str
    id: str | None = None


@dataclass(frozen=True)
class BatchLimits:
    max_bytes: int = 50_000_000
    max_rows: int = 200_000
    max_text_chars: int = 20_000
    max_members: int = 10_000
    max_unpacked_bytes: int = 200_000_000
    max_ratio: float = 100.0


class BatchFormatError(UneraseError):
    """The whole file cannot be read (format, encoding, header, archive)."""

    status = 422
    code = "invalid-batch"


class BatchTooLarge(BatchFormatError):
    """The file, its row count or its unpacked size is over a limit."""

    status = 413
    code = "batch-too-large"


def detect_format(filename: str, head: bytes) -> Format:
    """The format from the file name's extension, else from the first bytes."""
    name = re.split(r"[\\/]", filename)[-1]  # browsers on Windows may send the whole path
    dot = name.rfind(".")
    extension = name[dot:].lower() if dot > 0 else ""
    by_name = _EXTENSIONS.get(extension)
    looks_zipped = head.startswith(_ZIP_MAGIC)
    if by_name is not None:
        # A spreadsheet saved as .xlsx and renamed is a common mistake; decoding it would only report bad UTF-8.
        if by_name != "zip" and looks_zipped:
            raise BatchFormatError(
                f"{filename!r} is named like {by_name} but is a ZIP archive (an Excel workbook?); "
                f"export it as {by_name.upper()} in UTF-8, or name it .zip if it holds .txt files"
            )
        return by_name
    if looks_zipped:
        return "zip"
    sample = head.removeprefix(_BOM)
    if b"\x00" not in sample and _is_utf8_prefix(sample):
        return "jsonl" if sample.lstrip().startswith(b"{") else "csv"
    raise BatchFormatError(f"cannot tell the format of {filename!r}; accepted: {_ACCEPTED}")


def _is_utf8_prefix(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        # A head cut in the middle of a multi-byte character is still text.
        return exc.reason == "unexpected end of data" and exc.end == len(data)
    return True


def _decode(data: bytes, what: str) -> str:
    """UTF-8 text without a BOM, or an error that points at the first bad byte."""
    skipped = len(_BOM) if data.startswith(_BOM) else 0
    try:
        return data[skipped:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = skipped + exc.start
        line = data.count(b"\n", 0, offset) + 1
        raise BatchFormatError(
            f"{what} is not valid UTF-8: byte 0x{data[offset]:02x} at line {line}, byte offset {offset}; "
            "save the file as UTF-8 and try again"
        ) from None


def _check_size(data: bytes, limits: BatchLimits) -> None:
    if len(data) > limits.max_bytes:
        raise BatchTooLarge(f"the file has {len(data):,} bytes; at most {limits.max_bytes:,} are accepted")


def _too_many_rows(count: int, limits: BatchLimits) -> BatchTooLarge:
    return BatchTooLarge(f"the file has {count:,} records; at most {limits.max_rows:,} are accepted")


def _check_text(
    text: str, line: int, record_id: str, limits: BatchLimits, lang: str | None = None
) -> Record | RowError:
    if not text.strip():
        return RowError(line, "the text is empty; give a non-empty text", record_id)
    surrogate = _SURROGATE.search(text)  # JSON may escape half a surrogate pair alone; no database stores it
    if surrogate is not None:
        return RowError(
            line,
            f"the text holds a lone UTF-16 surrogate (U+{ord(surrogate.group()):04X}) at character "
            f"{surrogate.start()}, which is not a character; give valid Unicode text",
            record_id,
        )
    if len(text) > limits.max_text_chars:
        return RowError(
            line, f"the text has {len(text):,} characters; at most {limits.max_text_chars:,} are accepted", record_id
        )
    return Record(line, record_id, text, lang)


def read_records(
    data: bytes,
    fmt: Format,
    *,
    text_column: str | None = None,
    id_column: str | None = None,
    lang_column: str | None = None,
    limits: BatchLimits = BatchLimits(),
) -> Iterator[Record | RowError]:
    """The records of a file in order, with a RowError in place of each record that cannot be analysed.

    Whole-file problems raise BatchFormatError (BatchTooLarge for limits) from this call, not later.
    The column arguments apply to CSV only.
    """
    _check_size(data, limits)
    if fmt == "csv":
        return _read_csv(data, text_column, id_column, lang_column, limits)
    if fmt == "jsonl":
        return _read_jsonl(data, limits)
    if fmt == "zip":
        return _read_zip(data, limits)
    raise BatchFormatError(f"format {fmt!r} is not known; accepted: {', '.join(FORMATS)}")


# --- CSV ---------------------------------------------------------------------------------------------

_ONE_COLUMN = "\x1f"  # the ASCII unit separator never occurs in real text, so a one-column file is never split


def _delimiter(text: str) -> str:
    """The delimiter among , ; and TAB; the header line decides when it holds only one of them."""
    sample = text[:_SNIFF_CHARS]
    header = sample.split("\n", 1)[0]
    present = [d for d in _DELIMITERS if d in header]
    if not present:
        return _ONE_COLUMN
    if len(present) == 1:
        # Data rows often hold commas inside texts; the header says more reliably what separates cells.
        return present[0]
    try:
        return csv.Sniffer().sniff(sample, delimiters="".join(present)).delimiter
    except csv.Error:
        return "," if "," in present else present[0]


def _csv_rows(text: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """Non-blank rows with the physical line where each starts (quoted cells may span lines)."""
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    start = 1
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "field larger than field limit" in str(exc):
                detail = f"a cell is longer than {csv.field_size_limit():,} characters; is a quote left open?"
            else:
                detail = f"{exc}; cells are separated by {delimiter!r} and may be quoted with double quotes"
            raise BatchFormatError(f"cannot read the CSV record starting at line {start}: {detail}") from None
        if any(cell.strip() for cell in row):
            yield start, row
        start = reader.line_num + 1


def _column(header: list[str], wanted: str, role: str) -> int:
    names = [name.strip().casefold() for name in header]
    key = wanted.strip().casefold()
    if key in names:
        return names.index(key)
    found = ", ".join(repr(name) for name in header)
    raise BatchFormatError(f"the CSV header has no column {wanted!r} for the {role}; columns found: {found}")


def _csv_header(text: str) -> tuple[str, list[str], Iterator[tuple[int, list[str]]]]:
    delimiter = _delimiter(text)
    rows = _csv_rows(text, delimiter)
    first = next(rows, None)
    if first is None:
        raise BatchFormatError("the CSV file is empty; expected a header row with a 'text' column, then the rows")
    return delimiter, [name.strip() for name in first[1]], rows


def csv_columns(data: bytes) -> list[str]:
    """The names in the header row, for letting a person choose the text column."""
    return _csv_header(_decode(data, "the CSV file"))[1]


def _read_csv(
    data: bytes, text_column: str | None, id_column: str | None, lang_column: str | None, limits: BatchLimits
) -> Iterator[Record | RowError]:
    text = _decode(data, "the CSV file")
    delimiter, header, rows = _csv_header(text)
    if text_column is None and "text" not in (name.casefold() for name in header):
        found = ", ".join(repr(name) for name in header)
        raise BatchFormatError(
            f"the CSV header has no 'text' column; columns found: {found}; "
            "name the column that holds the texts 'text', or choose it by name"
        )
    text_at = _column(header, text_column or "text", "texts")
    id_at = _column(header, id_column, "ids") if id_column else None
    lang_at = _column(header, lang_column, "languages") if lang_column else None
    # Counting first (the csv module is fast) keeps the promise that limits fail before any record is produced.
    count = sum(1 for _ in rows)
    if count > limits.max_rows:
        raise _too_many_rows(count, limits)
    return _csv_records(text, delimiter, len(header), text_at, id_at, lang_at, limits)


def _csv_records(
    text: str, delimiter: str, width: int, text_at: int, id_at: int | None, lang_at: int | None, limits: BatchLimits
) -> Iterator[Record | RowError]:
    rows = _csv_rows(text, delimiter)
    next(rows)  # the header, already checked

    def cell(row: list[str], at: int | None) -> str:
        return row[at] if at is not None and at < len(row) else ""

    for line, row in rows:
        record_id = cell(row, id_at).strip() or str(line)
        if any(extra.strip() for extra in row[width:]):
            yield RowError(
                line,
                f"the row has {len(row)} cells but the header has {width}; "
                f"quote cells that contain the delimiter {delimiter!r}",
                record_id,
            )
            continue
        yield _check_text(cell(row, text_at), line, record_id, limits, cell(row, lang_at).strip() or None)


# --- JSONL -------------------------------------------------------------------------------------------

_JSONL_SHAPE = 'expected one object per line like {"id": "a1", "text": "...", "lang": "en"}'


def _read_jsonl(data: bytes, limits: BatchLimits) -> Iterator[Record | RowError]:
    # Split on newlines only: str.splitlines would also cut at U+2028, which JSON allows unescaped inside strings.
    lines = _decode(data, "the JSONL file").split("\n")
    count = sum(1 for line in lines if line.strip())
    if count > limits.max_rows:
        raise _too_many_rows(count, limits)
    return (_jsonl_record(number, line, limits) for number, line in enumerate(lines, start=1) if line.strip())


def _jsonl_record(number: int, line: str, limits: BatchLimits) -> Record | RowError:
    try:
        value = parse_line(line)
    except UnreadableLine as exc:
        return RowError(number, f"{exc.problem}; {_JSONL_SHAPE}")
    if not isinstance(value, dict):
        return RowError(number, f"the line holds a JSON {_json_type(value)}, not an object; {_JSONL_SHAPE}")
    raw_id = value.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int | float)):
        return RowError(number, f'"id" is {json.dumps(raw_id)}; a string or a number is accepted')
    record_id = str(raw_id) if raw_id is not None and str(raw_id) else str(number)
    text = value.get("text")
    if not isinstance(text, str):
        got = "missing" if "text" not in value else f"a JSON {_json_type(text)}"
        return RowError(number, f'"text" is {got}; a string is accepted', record_id)
    lang = value.get("lang")
    if lang is not None and not isinstance(lang, str):
        return RowError(number, f'"lang" is {json.dumps(lang)}; a language code like "en" is accepted', record_id)
    return _check_text(text, number, record_id, limits, lang.strip() if lang and lang.strip() else None)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --- ZIP ---------------------------------------------------------------------------------------------

_DRIVE = re.compile(r"^[A-Za-z]:")


def _unsafe_name(name: str) -> str | None:
    """Why a member name could point outside the folder it would be unpacked into, or None if it is plain."""
    if "\\" in name:
        return "contains a backslash"
    if name.startswith("/"):
        return "is an absolute path"
    if _DRIVE.match(name):
        return "starts with a drive letter"
    if ".." in name.split("/"):
        return "climbs to a parent folder with '..'"
    return None


def _read_zip(data: bytes, limits: BatchLimits) -> Iterator[Record | RowError]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise BatchFormatError(f"the ZIP archive cannot be opened ({exc}); accepted: a .zip of .txt files") from None
    members = archive.infolist()
    # Everything below uses only the central directory, so a bomb is refused before a single byte is inflated.
    if len(members) > limits.max_members:
        raise BatchTooLarge(f"the archive has {len(members):,} entries; at most {limits.max_members:,} are accepted")
    files = sum(1 for m in members if not m.is_dir())
    if files > limits.max_rows:
        raise _too_many_rows(files, limits)
    unpacked = sum(m.file_size for m in members)
    if unpacked > limits.max_unpacked_bytes:
        raise BatchTooLarge(
            f"the archive unpacks to {unpacked:,} bytes; at most {limits.max_unpacked_bytes:,} are accepted"
        )
    if unpacked > _RATIO_FLOOR and unpacked / max(len(data), 1) > limits.max_ratio:
        raise BatchTooLarge(
            f"the archive unpacks to {unpacked / max(len(data), 1):.0f} times its size; "
            f"at most {limits.max_ratio:g} times is accepted"
        )
    for member in members:
        ratio = member.file_size / max(member.compress_size, 1)
        if member.file_size > _RATIO_FLOOR and ratio > limits.max_ratio:
            raise BatchTooLarge(
                f"member {member.filename!r} unpacks to {ratio:.0f} times its compressed size; "
                f"at most {limits.max_ratio:g} times is accepted"
            )
    return _zip_records(archive, members, limits)


def _zip_records(
    archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], limits: BatchLimits
) -> Iterator[Record | RowError]:
    with archive:
        for index, member in enumerate(members, start=1):
            if not member.is_dir():
                yield _zip_record(archive, index, member, limits)


def _zip_record(
    archive: zipfile.ZipFile, index: int, member: zipfile.ZipInfo, limits: BatchLimits
) -> Record | RowError:
    name = member.filename
    unsafe = _unsafe_name(name)
    if unsafe is not None:
        reason = f"not read: the name {unsafe} (path traversal); only plain relative names are accepted"
        return RowError(index, reason, name)
    mode = member.external_attr >> 16
    if stat.S_IFMT(mode) and not stat.S_ISREG(mode):
        return RowError(index, "skipped: not a regular file (a link?); only regular .txt files are read", name)
    if not name.lower().endswith(".txt"):
        return RowError(index, "skipped: only .txt files are read", name)
    if member.flag_bits & 0x1:
        return RowError(index, "skipped: the file is encrypted; only unencrypted .txt files are read", name)
    # UTF-8 needs at most 4 bytes a character, so a bigger member cannot fit the text limit; don't inflate it.
    if member.file_size > 4 * limits.max_text_chars:
        reason = f"the file has {member.file_size:,} bytes; texts of at most {limits.max_text_chars:,} characters"
        return RowError(index, reason + " are accepted", name)
    try:
        with archive.open(member) as stream:
            # Never trust the header's size: read one byte more than it claims and compare.
            raw = stream.read(member.file_size + 1)
    except (zipfile.BadZipFile, NotImplementedError, EOFError, OSError, RuntimeError, zlib.error) as exc:
        return RowError(index, f"the file cannot be unpacked ({exc}); the archive may be damaged", name)
    if len(raw) != member.file_size:
        reason = f"the file unpacks to a different size than the archive says ({member.file_size:,} bytes)"
        return RowError(index, reason + "; the archive is damaged", name)
    try:
        text = _decode(raw, f"the file {name!r}")
    except BatchFormatError as exc:
        return RowError(index, exc.message, name)
    return _check_text(text, index, name, limits)


# --- output ------------------------------------------------------------------------------------------

_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")

RESULT_COLUMNS: tuple[str, ...] = (
    "id",
    "line",
    "lang",
    "label",
    "severity",
    "confidence",
    "categories",
    "terms",
    "hit_count",
    "explanation",
    "error",
    "stage_errors",
)


def neutralise_cell(value: str) -> str:
    """The cell with a leading apostrophe when a spreadsheet would read it as a formula.

    Spreadsheets also skip leading spaces before a formula, so those do not make a cell safe.
    """
    if value.startswith(_FORMULA_STARTS) or value.lstrip().startswith(_FORMULA_STARTS):
        return "'" + value
    return value


def _message(error: Any) -> str:
    if isinstance(error, Mapping):
        code, message = error.get("code"), error.get("message")
        return f"{code}: {message}" if code else str(message or "")
    return "" if error is None else str(error)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def result_row(result: Mapping[str, Any]) -> list[str]:
    """One CSV row (in RESULT_COLUMNS order) from a record as `engine.result.record` builds it (or an error)."""
    decision = result.get("decision") or {}
    hits = result.get("hits") or []
    explanation = result.get("explanation")
    stage_errors = result.get("errors") or []
    cells = [
        _text(result.get("id")),
        _text(result.get("line")),
        _text(language_of(result)),
        _text(decision.get("label")),
        _text(decision.get("severity")),
        _text(decision.get("confidence")),
        ";".join(decision.get("categories") or ()),
        ";".join(_text(hit.get("term")) for hit in hits),
        "" if "error" in result and not hits else str(len(hits)),
        _text(explanation.get("text") if isinstance(explanation, Mapping) else explanation),
        _message(result.get("error")),
        ";".join(_message(e) for e in stage_errors),
    ]
    return [neutralise_cell(cell) for cell in cells]


def write_csv(results: Iterable[Mapping[str, Any]], out: IO[str]) -> int:
    """Header and one row per result; returns the rows written. Open `out` with newline=""."""
    writer = csv.writer(out)
    writer.writerow(RESULT_COLUMNS)
    rows = 0
    for result in results:
        writer.writerow(result_row(result))
        rows += 1
    return rows


def write_jsonl(results: Iterable[Mapping[str, Any]], out: IO[str]) -> int:
    """One JSON object per line; returns the lines written."""
    lines = 0
    for result in results:
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
        lines += 1
    return lines
