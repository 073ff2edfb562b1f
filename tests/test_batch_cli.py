"""`unerase batch` end to end: real files, the shipped vocabularies, vocabulary-only mode (no model)."""

from __future__ import annotations

import csv
import json
import re
import zipfile
from pathlib import Path

import pytest

from engine.batch import RESULT_COLUMNS
from engine.cli import main

SUMMARY = re.compile(r"^(\d+) rows: (\d+) analysed, (\d+) errors( \(see output\))?, \d+\.\d s$", re.MULTILINE)


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def private_cache(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Matcher indexes go to a folder of this module (shared by its tests), never to the user's cache."""
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(cache_dir))


def fifty_rows(tmp_path: Path) -> Path:
    """50 posts with ; as delimiter: a slur every tenth row, one empty text, one formula, one multi-line post."""
    lines = ["post_id;Text;language"]
    for n in range(1, 51):
        if n == 7:
            text = ""
        elif n == 13:
            text = "=1+1 is what she wrote"
        elif n == 21:
            text = '"a post\nwritten over two lines"'
        elif n % 10 == 0:
            text = f"post {n}: what a skank she is"
        else:
            text = f"post {n} about the weather and the harbour"
        lines.append(f"p{n};{text};en")
    source = tmp_path / "posts.csv"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return source


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["batch", *args, "--no-cache"])
    out, err = capsys.readouterr()
    return code, out, err


def test_fifty_row_csv_to_jsonl_in_input_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = fifty_rows(tmp_path)
    target = tmp_path / "results.jsonl"
    code, out, err = run(
        capsys, str(source), "--id-column", "post_id", "--lang-column", "language", "--output", str(target)
    )
    results = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert code == 0 and out == ""
    assert [r["id"] for r in results] == [f"p{n}" for n in range(1, 51)]
    # Physical lines: the two-line post (p21) pushes every later row one line down.
    assert [r["line"] for r in results] == [n + 1 if n <= 21 else n + 2 for n in range(1, 51)]
    assert results[6] == {
        "id": "p7",
        "line": 8,
        "error": {"code": "invalid-record", "message": "the text is empty; give a non-empty text"},
    }
    flagged = [r["id"] for r in results if r.get("decision", {}).get("label") == "flagged"]
    assert flagged == ["p10", "p20", "p30", "p40", "p50"]
    assert [h["term"] for h in results[9]["hits"]] == ["skank"] and results[9]["models"] == ["none"]
    assert all(r["hits"] == [] and r["decision"]["label"] == "not_flagged" for r in results[:6])
    assert SUMMARY.search(err) is not None and SUMMARY.search(err).groups()[:4] == ("50", "49", "1", " (see output)")  # type: ignore[union-attr]
    assert "\r[" not in err  # stderr is no terminal here, so no progress bar


def test_csv_output_is_neutralised_and_the_progress_bar_is_drawn_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = fifty_rows(tmp_path)
    target = tmp_path / "results.csv"
    code, _, err = run(
        capsys,
        str(source),
        "--id-column=post_id",
        "--lang-column=language",
        f"--output={target}",
        "--progress",
        "--concurrency=3",
    )
    with target.open(encoding="utf-8", newline="") as back:
        rows = [dict(zip(RESULT_COLUMNS, row, strict=True)) for row in csv.reader(back)]
    assert code == 0
    assert list(rows[0].values()) == list(RESULT_COLUMNS)
    body = rows[1:]
    assert [r["id"] for r in body] == [f"p{n}" for n in range(1, 51)]
    assert body[9]["label"] == "flagged" and body[9]["terms"] == "skank" and body[9]["hit_count"] == "1"
    assert body[9]["categories"] == "gender" and body[9]["lang"] == "en"
    assert body[6]["error"] == "invalid-record: the text is empty; give a non-empty text" and body[6]["label"] == ""
    assert body[0]["label"] == "not_flagged" and body[0]["hit_count"] == "0" and body[0]["error"] == ""
    assert "[##############################] 50/50 rows" in err and " rows/s" in err
    assert SUMMARY.search(err) is not None


def test_formula_cells_in_the_input_come_back_neutralised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "formulas.csv"  # misnamed: --format overrides the extension
    ids = ["=1+1", "@SUM(A1)", "+cmd", "-2+3", "\t=x"]
    source.write_text(
        "".join(json.dumps({"id": i, "text": f"text {n}", "lang": "en"}) + "\n" for n, i in enumerate(ids)),
        encoding="utf-8",
    )
    target = tmp_path / "out.csv"
    code, _, _ = run(capsys, str(source), "--format", "jsonl", "--output", str(target))
    with target.open(encoding="utf-8", newline="") as back:
        written = [row[0] for row in list(csv.reader(back))[1:]]
    assert code == 0 and written == ["'=1+1", "'@SUM(A1)", "'+cmd", "'-2+3", "'\t=x"]


def test_zip_of_txt_files_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "texts.zip"
    with zipfile.ZipFile(source, "w") as archive:
        archive.writestr("a.txt", "what a skank she is")
        archive.writestr("../b.txt", "never read")
        archive.writestr("c.txt", "calm words only")
    code, out, err = run(capsys, str(source), "--lang", "en")
    results = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [(r["id"], r["line"]) for r in results] == [("a.txt", 1), ("../b.txt", 2), ("c.txt", 3)]
    assert results[0]["decision"]["label"] == "flagged" and "path traversal" in results[1]["error"]["message"]
    assert "3 rows: 2 analysed, 1 errors (see output)" in err


def test_whole_file_errors_exit_2_and_write_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    latin = tmp_path / "latin1.csv"
    latin.write_bytes("text\nun café\n".encode("latin-1"))
    target = tmp_path / "out.jsonl"
    code, _, err = run(capsys, str(latin), "--output", str(target))
    assert code == 2 and not target.exists()
    assert "unerase: error: the CSV file is not valid UTF-8: byte 0xe9 at line 2, byte offset 11" in err
    assert "save the file as UTF-8" in err

    no_text = tmp_path / "columns.csv"
    no_text.write_text("id,body\n1,hello\n", encoding="utf-8")
    code, _, err = run(capsys, str(no_text))
    assert code == 2 and "no 'text' column; columns found: 'id', 'body'" in err

    code, _, err = run(capsys, str(no_text), "--text-column", "body", "--output", str(tmp_path / "out.xlsx"))
    assert code == 2 and "--output" in err and "accepted: .jsonl, .ndjson, .csv" in err

    code, _, err = run(capsys, str(tmp_path / "missing.csv"))
    assert code == 2 and "cannot read" in err and "missing.csv" in err
