"""Reading batch files (CSV, JSONL, ZIP of .txt) defensively, and writing results safely."""

from __future__ import annotations

import csv
import io
import json
import os
import stat
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from engine.batch import (
    RESULT_COLUMNS,
    BatchFormatError,
    BatchLimits,
    BatchTooLarge,
    Record,
    RowError,
    csv_columns,
    detect_format,
    neutralise_cell,
    read_records,
    result_row,
    write_csv,
    write_jsonl,
)


def read(path: Path, fmt: str, **options: Any) -> list[Record | RowError]:
    return list(read_records(path.read_bytes(), fmt, **options))  # type: ignore[arg-type]


# --- CSV ---------------------------------------------------------------------------------------------


def test_csv_with_semicolons_bom_and_quoted_newlines(tmp_path: Path) -> None:
    source = tmp_path / "posts.csv"
    source.write_bytes(
        "\ufeffID;Text;Lang\r\n"
        'p1;"first line\r\nsecond; still the same cell";en\r\n'
        "\r\n"
        "p2;Ein Zigeunerschnitzel, bitte;de\r\n"
        'p3;"three\nlines\nhere";\r\n'
        "p4;after the multi-line cell;en\r\n".encode()
    )
    records = read(source, "csv", id_column="id", lang_column="LANG")
    assert records == [
        Record(2, "p1", "first line\r\nsecond; still the same cell", "en"),
        Record(5, "p2", "Ein Zigeunerschnitzel, bitte", "de"),
        Record(6, "p3", "three\nlines\nhere", None),
        Record(9, "p4", "after the multi-line cell", "en"),
    ]
    assert csv_columns(source.read_bytes()) == ["ID", "Text", "Lang"]


def test_csv_tab_delimiter_and_line_numbers_as_default_ids(tmp_path: Path) -> None:
    source = tmp_path / "posts.tsv"
    source.write_text("text\tscore\nhello, world\t1\nbye; now\t2\n", encoding="utf-8")
    assert read(source, "csv") == [Record(2, "2", "hello, world"), Record(3, "3", "bye; now")]


def test_csv_with_one_column_keeps_commas_inside_the_text(tmp_path: Path) -> None:
    source = tmp_path / "one.csv"
    source.write_text("text\nwell, that is, you know, a text\n", encoding="utf-8")
    assert read(source, "csv") == [Record(2, "2", "well, that is, you know, a text")]


def test_csv_chosen_text_column_and_duplicate_ids_are_allowed(tmp_path: Path) -> None:
    source = tmp_path / "posts.csv"
    source.write_text("id,body,text\nx,first body,ignored\nx,second body,ignored\n", encoding="utf-8")
    records = read(source, "csv", text_column="Body", id_column="id")
    assert [(r.id, r.text) for r in records if isinstance(r, Record)] == [("x", "first body"), ("x", "second body")]


def test_csv_row_problems_are_row_errors_and_the_rest_is_read(tmp_path: Path) -> None:
    source = tmp_path / "posts.csv"
    source.write_text(
        f"id,text\na,fine\nb,   \nc,{'x' * 31}\nd,one,two\n,no id given\n",
        encoding="utf-8",
    )
    records = read(source, "csv", id_column="id", limits=BatchLimits(max_text_chars=30))
    assert records[0] == Record(2, "a", "fine")
    assert records[1] == RowError(3, "the text is empty; give a non-empty text", "b")
    assert records[2] == RowError(4, "the text has 31 characters; at most 30 are accepted", "c")
    assert isinstance(records[3], RowError) and (records[3].line, records[3].id) == (5, "d")
    assert "the row has 3 cells but the header has 2; quote cells that contain the delimiter ','" in records[3].message
    assert records[4] == Record(6, "6", "no id given")


def test_csv_without_a_text_column_lists_the_columns_found(tmp_path: Path) -> None:
    source = tmp_path / "posts.csv"
    source.write_text("id,message,lang\n1,hello,en\n", encoding="utf-8")
    with pytest.raises(BatchFormatError, match="no 'text' column; columns found: 'id', 'message', 'lang'"):
        read_records(source.read_bytes(), "csv")
    with pytest.raises(BatchFormatError, match="no column 'body' for the texts; columns found: 'id', 'message'"):
        read_records(source.read_bytes(), "csv", text_column="body")
    with pytest.raises(BatchFormatError, match="no column 'key' for the ids"):
        read_records(source.read_bytes(), "csv", text_column="message", id_column="key")
    with pytest.raises(BatchFormatError, match="the CSV file is empty"):
        read_records(b"\n\n", "csv")


def test_latin1_csv_names_line_and_byte_offset_of_the_first_bad_byte(tmp_path: Path) -> None:
    source = tmp_path / "latin1.csv"
    source.write_bytes("id,text\n1,fine\n2,un café noir\n".encode("latin-1"))
    offset = source.read_bytes().index(b"\xe9")
    expected = f"byte 0xe9 at line 3, byte offset {offset}; save the file as UTF-8"
    with pytest.raises(BatchFormatError, match=expected) as caught:
        read_records(source.read_bytes(), "csv")
    assert caught.value.status == 422 and caught.value.code == "invalid-batch"
    with pytest.raises(BatchFormatError, match=expected):
        csv_columns(source.read_bytes())


def test_an_unclosed_quote_is_a_clear_whole_file_error() -> None:
    data = ('text\nfine\n"opened and never closed ' + "x" * 140_000 + "\n").encode()
    with pytest.raises(BatchFormatError, match=r"record starting at line 3: a cell is longer than .* quote left open"):
        read_records(data, "csv")


def test_size_and_row_limits_fail_before_any_record_is_produced() -> None:
    data = b"text\n" + b"hello\n" * 10
    with pytest.raises(BatchTooLarge, match="the file has 65 bytes; at most 64 are accepted") as caught:
        read_records(data, "csv", limits=BatchLimits(max_bytes=64))
    assert caught.value.status == 413 and caught.value.code == "batch-too-large"
    # Raised by the call itself: a caller can reject the upload without iterating.
    with pytest.raises(BatchTooLarge, match="the file has 10 records; at most 9 are accepted"):
        read_records(data, "csv", limits=BatchLimits(max_rows=9))
    with pytest.raises(BatchTooLarge, match="at most 9 are accepted"):
        read_records(b'{"text": "a"}\n' * 10, "jsonl", limits=BatchLimits(max_rows=9))
    assert len(list(read_records(data, "csv", limits=BatchLimits(max_rows=10)))) == 10


# --- JSONL -------------------------------------------------------------------------------------------


def test_jsonl_bad_lines_become_row_errors_with_their_line(tmp_path: Path) -> None:
    source = tmp_path / "posts.jsonl"
    source.write_text(
        "\n".join(
            [
                json.dumps({"id": 7, "text": "numeric id", "lang": "en"}),
                "",
                "{broken",
                "[1, 2]",
                json.dumps({"id": "m", "body": "no text key"}),
                json.dumps({"id": "n", "text": ["not", "a", "string"]}),
                json.dumps({"id": {"x": 1}, "text": "odd id"}),
                json.dumps({"text": "no id, language given as a number", "lang": 3}),
                json.dumps({"text": "line separator \u2028 inside"}, ensure_ascii=False),
                "   ",
                json.dumps({"id": "e", "text": "   "}),
            ]
        )
        + "\r\n",
        encoding="utf-8",
    )
    records = read(source, "jsonl")
    assert records[0] == Record(1, "7", "numeric id", "en")
    assert records[1].line == 3 and "not valid JSON" in records[1].message  # type: ignore[union-attr]
    assert records[2] == RowError(
        4,
        'the line holds a JSON array, not an object; expected one object per line like {"id": "a1", "text": '
        '"...", "lang": "en"}',
    )
    assert records[3] == RowError(5, '"text" is missing; a string is accepted', "m")
    assert records[4] == RowError(6, '"text" is a JSON array; a string is accepted', "n")
    assert records[5] == RowError(7, '"id" is {"x": 1}; a string or a number is accepted')
    assert records[6] == RowError(8, '"lang" is 3; a language code like "en" is accepted', "8")
    assert records[7] == Record(9, "9", "line separator \u2028 inside")
    assert records[8] == RowError(11, "the text is empty; give a non-empty text", "e")
    assert len(records) == 9


def test_a_deeply_nested_jsonl_line_is_that_rows_error_and_the_rest_is_read() -> None:
    data = b"\n".join(
        [
            b'{"id": "a", "text": "first"}',
            b"[" * 100_000,  # nested deeper than any parser's stack: never a text
            b'{"id": "c", "text": "third", "extra": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
            b'{"id": "d", "text": "half a pair \\ud800 alone"}',
            b'{"id": "e", "text": "last"}',
        ]
    )
    records = list(read_records(data, "jsonl"))
    assert records[0] == Record(1, "a", "first")
    assert records[1] == RowError(
        2, 'the JSON is nested too deeply to read; expected one object per line like {"id": "a1", "text": '
        '"...", "lang": "en"}',
    )  # fmt: skip
    assert records[2] == RowError(
        3, 'the JSON is nested too deeply to read; expected one object per line like {"id": "a1", "text": '
        '"...", "lang": "en"}',
    )  # fmt: skip
    assert records[3] == RowError(
        4,
        "the text holds a lone UTF-16 surrogate (U+D800) at character 12, which is not a character; "
        "give valid Unicode text",
        "d",
    )
    assert records[4] == Record(5, "e", "last")


def test_jsonl_with_bom_and_latin1(tmp_path: Path) -> None:
    assert list(read_records(b'\xef\xbb\xbf{"text": "ok"}\n', "jsonl")) == [Record(1, "1", "ok")]
    with pytest.raises(BatchFormatError, match="line 2, byte offset 26; save the file as UTF-8"):
        read_records('{"text": "ok"}\n{"text": "né"}\n'.encode("latin-1"), "jsonl")


# --- ZIP ---------------------------------------------------------------------------------------------


def make_zip(path: Path, members: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    with zipfile.ZipFile(path, "w", method) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return path.read_bytes()


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the members the reader actually unpacks (zipfile.ZipFile.open is watched, not replaced)."""
    names: list[str] = []
    original = zipfile.ZipFile.open

    def watched(self: zipfile.ZipFile, name: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode == "r":  # writing the test archives also goes through open
            names.append(name.filename if isinstance(name, zipfile.ZipInfo) else name)
        return original(self, name, mode, *args, **kwargs)

    monkeypatch.setattr(zipfile.ZipFile, "open", watched)
    return names


def test_zip_reads_txt_members_and_refuses_traversal_names(tmp_path: Path, opened: list[str]) -> None:
    data = make_zip(
        tmp_path / "texts.zip",
        {
            "posts/": b"",
            "posts/a.txt": "\ufeffa post with a BOM".encode(),
            "../../etc/evil.txt": b"escape",
            "/abs.txt": b"absolute",
            "C:/windows.txt": b"drive",
            "posts\\back.txt": b"backslash",
            "posts/picture.png": b"\x89PNG",
            "posts/latin.TXT": "un café".encode("latin-1"),
            "posts/b.TXT": b"second post",
            "posts/empty.txt": b"  \n",
        },
    )
    records = list(read_records(data, "zip"))
    assert records[0] == Record(2, "posts/a.txt", "a post with a BOM")
    traversal = [r for r in records if isinstance(r, RowError) and "path traversal" in r.message]
    assert [(r.line, r.id) for r in traversal] == [
        (3, "../../etc/evil.txt"),
        (4, "/abs.txt"),
        (5, "C:/windows.txt"),
        (6, "posts\\back.txt"),
    ]
    assert records[5] == RowError(7, "skipped: only .txt files are read", "posts/picture.png")
    assert records[6] == RowError(
        8,
        "the file 'posts/latin.TXT' is not valid UTF-8: byte 0xe9 at line 1, byte offset 6; "
        "save the file as UTF-8 and try again",
        "posts/latin.TXT",
    )
    assert records[7] == Record(9, "posts/b.TXT", "second post")
    assert records[8] == RowError(10, "the text is empty; give a non-empty text", "posts/empty.txt")
    assert len(records) == 9  # the directory entry gives nothing
    assert opened == ["posts/a.txt", "posts/latin.TXT", "posts/b.TXT", "posts/empty.txt"]


def test_zip_bomb_is_refused_before_anything_is_unpacked(tmp_path: Path, opened: list[str]) -> None:
    bomb = make_zip(tmp_path / "bomb.zip", {"zeros.txt": bytes(50_000_000)})
    assert len(bomb) < 100_000
    with pytest.raises(BatchTooLarge, match=r"unpacks to \d+ times its size; at most 100 times is accepted"):
        read_records(bomb, "zip")
    # Many small members that add up: the total is checked, whatever each member's ratio.
    many = make_zip(tmp_path / "many.zip", {f"{n}.txt": b"a" * 1000 for n in range(20)}, zipfile.ZIP_STORED)
    with pytest.raises(BatchTooLarge, match="unpacks to 20,000 bytes; at most 19,999 are accepted"):
        read_records(many, "zip", limits=BatchLimits(max_unpacked_bytes=19_999))
    with pytest.raises(BatchTooLarge, match="the archive has 20 entries; at most 19 are accepted"):
        read_records(many, "zip", limits=BatchLimits(max_members=19))
    assert opened == []


def test_one_highly_compressed_member_among_incompressible_ones_is_refused(tmp_path: Path, opened: list[str]) -> None:
    data = make_zip(tmp_path / "mixed.zip", {"noise.txt": os.urandom(3_000_000), "zeros.txt": bytes(3_000_000)})
    # Overall the archive is only about twice its size, so the per-member check is what catches it.
    with pytest.raises(BatchTooLarge, match=r"member 'zeros.txt' unpacks to \d+ times its compressed size"):
        read_records(data, "zip")
    assert opened == []


def test_a_member_whose_header_understates_its_size_is_not_trusted(tmp_path: Path) -> None:
    data = bytearray(make_zip(tmp_path / "lying.zip", {"big.txt": b"much longer than it claims", "ok.txt": b"fine"}))
    # Patch the uncompressed size of big.txt, in its local header (offset 22) and central record (offset 24), to 4.
    local = data.index(b"PK\x03\x04")
    central = data.index(b"PK\x01\x02")
    struct.pack_into("<I", data, local + 22, 4)
    struct.pack_into("<I", data, central + 24, 4)
    records = list(read_records(bytes(data), "zip"))
    # Only the claimed 4 bytes (plus one) are inflated, so the checksum over the whole content cannot match.
    assert records[0] == RowError(
        1, "the file cannot be unpacked (Bad CRC-32 for file 'big.txt'); the archive may be damaged", "big.txt"
    )
    assert records[1] == Record(2, "ok.txt", "fine")


def test_a_member_shorter_than_its_header_says_is_reported(tmp_path: Path) -> None:
    data = bytearray(make_zip(tmp_path / "short.zip", {"a.txt": b"twelve bytes"}, zipfile.ZIP_STORED))
    struct.pack_into("<I", data, data.index(b"PK\x01\x02") + 24, 40)
    assert list(read_records(bytes(data), "zip")) == [
        RowError(
            1, "the file unpacks to a different size than the archive says (40 bytes); the archive is damaged", "a.txt"
        )
    ]


def test_corrupt_zip_is_a_whole_file_error(tmp_path: Path) -> None:
    with pytest.raises(BatchFormatError, match="the ZIP archive cannot be opened"):
        read_records(b"PK\x03\x04 not really an archive", "zip")


# --- format detection --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "head", "expected"),
    [
        ("posts.CSV", b"id,text\n", "csv"),
        ("C:\\Users\\me\\posts.jsonl", b'{"text": "a"}', "jsonl"),
        ("posts.tsv", b"id\ttext\n", "csv"),
        ("posts.jsonl", b'{"text": "a"}', "jsonl"),
        ("posts.ndjson", b'{"text": "a"}', "jsonl"),
        ("texts.zip", b"PK\x03\x04rest", "zip"),
        ("upload", b"PK\x03\x04rest", "zip"),
        ("upload", b'\xef\xbb\xbf  {"text": "a"}', "jsonl"),
        ("upload.txt", b"text\nhello", "csv"),
        ("upload", "text\nun caf\u00e9".encode()[:-1], "csv"),  # a head cut inside a character is still text
    ],
)
def test_detect_format(filename: str, head: bytes, expected: str) -> None:
    assert detect_format(filename, head) == expected


def test_detect_format_refuses_binary_and_renamed_workbooks() -> None:
    with pytest.raises(BatchFormatError, match=r"cannot tell the format of 'photo\.jpg'; accepted: csv"):
        detect_format("photo.jpg", b"\xff\xd8\xff\xe0\x00\x10JFIF")
    with pytest.raises(BatchFormatError, match=r"'sheet\.csv' is named like csv but is a ZIP archive"):
        detect_format("sheet.csv", b"PK\x03\x04")


# --- output ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "expected"),
    [
        ("=1+1", "'=1+1"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
        ("-2+3", "'-2+3"),
        ("\t=x", "'\t=x"),
        ("\rx", "'\rx"),
        ("   =HYPERLINK(1)", "'   =HYPERLINK(1)"),
        ("a = b", "a = b"),
        ("0.75", "0.75"),
        ("", ""),
    ],
)
def test_neutralise_cell(cell: str, expected: str) -> None:
    assert neutralise_cell(cell) == expected


RESULT = {
    "id": "=1+1",
    "line": 4,
    "lang": "en",
    "mode": "fast",
    "models": ["none"],
    "hits": [
        {"surface": "f@g", "term": "fag", "issue_id": "en-faggot", "start": 0, "end": 3},
        {"surface": "cripple", "term": "@cripple", "issue_id": "en-cripple", "start": 8, "end": 15},
    ],
    "explanation": {"text": "-the text uses a slur", "cited_hits": ["h1"]},
    "decision": {
        "label": "flagged",
        "severity": "high",
        "confidence": 0.9,
        "categories": ["sexual-orientation", "disability"],
        "reasons": [],
    },
    "errors": [{"code": "llm-unavailable", "message": "no model", "stage": "targeting"}],
}


def test_result_row_flattens_and_neutralises_every_cell() -> None:
    row = dict(zip(RESULT_COLUMNS, result_row(RESULT), strict=True))
    assert row == {
        "id": "'=1+1",
        "line": "4",
        "lang": "en",
        "label": "flagged",
        "severity": "high",
        "confidence": "0.9",
        "categories": "sexual-orientation;disability",
        "terms": "fag;@cripple",
        "hit_count": "2",
        "explanation": "'-the text uses a slur",
        "error": "",
        "stage_errors": "llm-unavailable: no model",
    }
    error = {"id": "@x", "line": 3, "error": {"code": "c", "message": "m"}}
    failed = dict(zip(RESULT_COLUMNS, result_row(error), strict=True))
    assert failed["id"] == "'@x" and failed["error"] == "c: m" and failed["hit_count"] == "" and failed["label"] == ""


def test_write_csv_and_jsonl_round_trip(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    error = {"id": None, "line": 9, "error": {"code": "invalid-record", "message": "+bad"}}
    with target.open("w", encoding="utf-8", newline="") as out:
        assert write_csv([RESULT, error], out) == 2
    with target.open(encoding="utf-8", newline="") as back:
        rows = list(csv.reader(back))
    assert rows[0] == list(RESULT_COLUMNS)
    assert rows[1] == result_row(RESULT)
    assert rows[2][RESULT_COLUMNS.index("error")] == "invalid-record: +bad"
    buffer = io.StringIO()
    assert write_jsonl([RESULT, error], buffer) == 2
    assert [json.loads(line) for line in buffer.getvalue().splitlines()] == [RESULT, error]


def test_zip_links_and_members_too_big_for_a_text_are_not_unpacked(tmp_path: Path, opened: list[str]) -> None:
    path = tmp_path / "odd.zip"
    with zipfile.ZipFile(path, "w") as archive:
        link = zipfile.ZipInfo("link.txt")
        link.create_system = 3  # unix, so the mode bits below are meaningful
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/etc/passwd")
        archive.writestr("long.txt", "x" * 41)
        archive.writestr("short.txt", "x" * 10)
    records = list(read_records(path.read_bytes(), "zip", limits=BatchLimits(max_text_chars=10)))
    assert records == [
        RowError(1, "skipped: not a regular file (a link?); only regular .txt files are read", "link.txt"),
        RowError(2, "the file has 41 bytes; texts of at most 10 characters are accepted", "long.txt"),
        Record(3, "short.txt", "x" * 10),
    ]
    assert opened == ["short.txt"]
