from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from engine.vocabulary.loader import load_vocabularies

from .support.paths import FIXTURES

VOCAB = str(FIXTURES / "vocab")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_detect_prints_span_categories_description_suggestions_sources(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "detect", "A half-caste child and a f@g", "--lang", "en", "--vocab", VOCAB)
    assert code == 0
    assert "[2:12] 'half-caste' -> half-caste (en-half-caste)" in out
    assert "categories: race, migration-colonial-past" in out
    assert "A colonial-era label for people of mixed parentage" in out
    assert "instead: mixed race, of mixed heritage" in out
    assert "sources: https://en.wiktionary.org/wiki/half-caste" in out
    assert "[25:28] 'f@g' -> fag (en-faggot)" in out and "obfuscated" in out


def test_detect_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "detect", "Quel sordo", "--lang", "it", "--vocab", VOCAB, "--json")
    data = json.loads(out)
    assert code == 0 and data["lang"] == "it" and data["lang_detected"] is False
    assert [(h["surface"], h["start"], h["end"], h["ambiguous"]) for h in data["hits"]] == [("sordo", 5, 10, True)]


def test_detect_errors_are_clear_with_non_zero_exit(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "detect", "text", "--lang", "xx", "--vocab", VOCAB)
    assert code == 2 and "language 'xx' is not supported" in err and "supported: de, el, en, it, nl" in err
    code, _, err = run(capsys, "detect", "   ", "--lang", "en", "--vocab", VOCAB)
    assert code == 2 and "empty or only whitespace" in err


def test_detect_jsonl_streams_one_result_per_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    lines = [
        {"id": 1, "text": "the welfare queens again", "lang": "en"},
        {"id": "b", "text": "Ein Zigeunerschnitzel und ein Bier für den Tisch da drüben bitte"},
        {"id": 3, "text": "", "lang": "en"},
        {"id": 4, "text": "ok", "lang": "xx"},
    ]
    source.write_text(
        "\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n{broken\n\n[1, 2]\n", encoding="utf-8"
    )
    out_file = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "detect", "--input", str(source), "--output", str(out_file), "--vocab", VOCAB)
    results = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert code == 3 and "2 records analysed, 4 with errors" in err
    assert results[0] == {
        "id": 1,
        "lang": "en",
        "hits": [
            {
                "id": "h1",
                "start": 4,
                "end": 18,
                "surface": "welfare queens",
                "term": "welfare queens",
                "term_id": "en-welfare-queen#welfare queens",
                "issue_id": "en-welfare-queen",
                "uri": "urn:unerase:en:en-welfare-queen",
                "language": "en",
                "categories": ["socioeconomic-status", "gender", "race"],
                "ambiguous": False,
                "obfuscated": False,
            }
        ],
        "vocabulary_version": load_vocabularies([VOCAB]).version,
    }
    assert results[1]["lang"] == "de" and [h["surface"] for h in results[1]["hits"]] == ["Zigeuner"]
    assert results[2]["error"]["code"] == "invalid-text" and results[2]["id"] == 3
    assert results[3]["error"]["code"] == "unsupported-language"
    assert results[4] == {
        "line": 5,
        "error": {"code": "invalid-record", "message": results[4]["error"]["message"]},
        "vocabulary_version": results[0]["vocabulary_version"],
    }
    assert "not valid JSON" in results[4]["error"]["message"]
    assert results[5]["line"] == 7 and '"text"' in results[5]["error"]["message"]


def test_vocab_stats_check_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "vocab", "stats", VOCAB)
    assert code == 0
    header, *rows = out.splitlines()
    assert header.split() == ["de", "el", "en", "it", "nl"]
    assert rows[0].split() == ["issues", "3", "2", "7", "2", "1"]
    code, out, _ = run(capsys, "vocab", "check", VOCAB)
    assert code == 0 and out.startswith("ok: 15 issues, 36 terms in de, el, en, it, nl; version ")
    ttl = tmp_path / "v.ttl"
    assert run(capsys, "vocab", "export", VOCAB, "--out", str(ttl))[0] == 0
    assert "skosxl:literalForm" in ttl.read_text(encoding="utf-8")


def test_malformed_vocabulary_exits_non_zero_naming_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: unerase-vocabulary/1\nlanguage: en\nissues:\n  - id: x\n    categories: [nope]\n")
    done = subprocess.run(
        [sys.executable, "-m", "engine.cli", "vocab", "check", str(bad)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert f"{bad}:4: the issue has no 'description'" in done.stderr


def test_import_then_detect_with_the_imported_vocabulary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "imported"
    code, printed, _ = run(
        capsys, "vocab", "import", str(FIXTURES / "en_detoex-sample.csv"), "--format", "detoex-csv", "--out", str(out)
    )
    assert code == 0 and printed.startswith("imported ")
    code, printed, _ = run(capsys, "vocab", "check", str(out))
    assert code == 0
    code, printed, _ = run(capsys, "detect", "look, a copper top", "--lang", "en", "--vocab", str(out), "--json")
    hits = json.loads(printed)["hits"]
    assert code == 0 and [(h["surface"], h["term"]) for h in hits] == [("copper top", "copper-top")]
    assert hits[0]["sources"] == ["https://en.wiktionary.org/wiki/copper-top"]


def test_analyze_streams_events_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", "a faggot and a crippled economy", "--lang", "en", "--vocab", VOCAB,
                       "--no-cache", "--stream", "--json")  # fmt: skip
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0
    assert [e["event"] for e in events] == [
        "analysis", "hit", "hit", "verdict", "verdict", "targeting", "explanation", "decision", "done",
    ]  # fmt: skip
    assert events[0]["data"]["mode"] == "vocabulary-only"
    assert events[-2]["data"]["label"] == "flagged"


def test_analyze_jsonl_runs_records_concurrently_in_input_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    texts = ["a junkie", "a friendly sentence about the weather", "", "he is crippled"] * 5
    source.write_text("\n".join(json.dumps({"id": i, "text": t, "lang": "en"}) for i, t in enumerate(texts)))
    out_file = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "analyze", "--input", str(source), "--output", str(out_file), "--vocab", VOCAB,
                       "--no-cache", "--concurrency", "3")  # fmt: skip
    results = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert code == 3 and "15 records analysed, 5 with errors" in err
    assert [r["id"] for r in results] == list(range(20))
    labels = [r.get("decision", {}).get("label") or r["error"]["code"] for r in results[:4]]
    assert labels == ["flagged", "not_flagged", "invalid-text", "flagged"]
    assert results[0]["hits"][0]["verdict"]["status"] == "contentious"
    # the ambiguous "crippled" is decided from the labelled examples, as the web app decides it
    assert results[3]["hits"][0]["verdict"]["decided_by"] == "examples"


def test_detect_jsonl_a_line_nested_too_deeply_is_its_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "text": "the welfare queens again", "lang": "en"}\n' + "[" * 100_000 + "\n")
    out_file = tmp_path / "out.jsonl"
    code, _, err = run(capsys, "detect", "--input", str(source), "--output", str(out_file), "--vocab", VOCAB)
    results = [json.loads(line) for line in out_file.read_text(encoding="utf-8").splitlines()]
    assert code == 3 and "1 records analysed, 1 with errors" in err
    assert results[0]["id"] == 1 and results[0]["hits"]
    assert results[1]["line"] == 2 and results[1]["error"]["code"] == "invalid-record"
    assert results[1]["error"]["message"].startswith("the JSON is nested too deeply to read; expected one object")
