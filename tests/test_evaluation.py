"""`unerase eval`: figures checked against hand-computed ones on a ten-row fixture, breakdowns, term precision,
`--compare` on two vocabularies, and bad files refused with the file, line and column named.

The fixture (tests/support/labelled.py) runs in vocabulary-only mode with the test vocabulary (tests/fixtures/vocab),
where the outcome of each row is known by construction: "fag"/"faggots" are unambiguous terms (flagged), "crippled"
is ambiguous with no sense cue, so vocabulary-only mode cannot decide it (needs_review), other texts have no term
(not flagged).

    row  text                           gold  outcome        lang  src
    1    what a fag he is               +     flagged        en    forum
    2    faggots out                    +     flagged        en    mail
    3    he lit a fag outside           -     flagged        en    forum
    4    it crippled him                +     needs_review   en    mail
    5    the strike crippled the port   -     needs_review   en    forum
    6    the storm crippled the town    -     needs_review   en    mail
    7    you people are vermin          +     not_flagged    en    forum
    8    schönes Wetter heute           -     not_flagged    de    mail
    9    der Hafen ist voll             -     not_flagged    de    forum
    10   geh weg                        +     not_flagged    de    mail

Table: positive flagged 2, not_flagged 2, needs_review 1; negative flagged 1, not_flagged 2, needs_review 2.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from engine.cli import main
from engine.labelled import Columns, LabelledFileError, Labels, parse_labelled

from .support.labelled import ROWS, RULES_ONLY, VOCAB, fixture_csv


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "eval-cache"))


def fixture_jsonl(tmp_path: Path) -> Path:
    path = tmp_path / "labelled.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for text, label, lang, src, _terms, span in ROWS:
            record = {"post": text, "verdict": "hateful" if label == "1" else "fine", "language": lang, "src": src}
            record["spans"] = span
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def run_eval(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict, str]:  # type: ignore[type-arg]
    code = main(["eval", *args, "--vocab", VOCAB, "--no-cache", *RULES_ONLY, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else {}), err


def close(value: float | None, expected: Fraction | None) -> bool:
    if expected is None:
        return value is None
    return value is not None and abs(value - float(expected)) < 1e-9


# review_as -> accuracy, precision, recall, F1, rows counted (hand-computed from the table in the docstring)
EXPECTED = {
    # review = flagged: TP 3, FN 2, FP 3, TN 2
    "positive": (Fraction(5, 10), Fraction(3, 6), Fraction(3, 5), Fraction(6, 11), 10),
    # review = not flagged: TP 2, FN 3, FP 1, TN 4
    "negative": (Fraction(6, 10), Fraction(2, 3), Fraction(2, 5), Fraction(4, 8), 10),
    # review set aside: TP 2, FN 2, FP 1, TN 2 over 7 rows
    "separate": (Fraction(4, 7), Fraction(2, 3), Fraction(2, 4), Fraction(4, 7), 7),
    # review decided as labelled: TP 3, FN 2, FP 1, TN 4
    "correct": (Fraction(7, 10), Fraction(3, 4), Fraction(3, 5), Fraction(6, 9), 10),
}


@pytest.mark.parametrize("review_as", sorted(EXPECTED))
def test_figures_equal_hand_computed_ones(review_as: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _err = run_eval(capsys, str(fixture_csv(tmp_path)), "--lang-column", "lang", "--review-as", review_as)
    assert code == 0
    overall = report["overall"]
    accuracy, precision, recall, f1, counted = EXPECTED[review_as]
    assert overall["table"] == {
        "positive": {"flagged": 2, "not_flagged": 2, "needs_review": 1, "error": 0},
        "negative": {"flagged": 1, "not_flagged": 2, "needs_review": 2, "error": 0},
    }
    assert overall["counted"] == counted
    assert close(overall["accuracy"], accuracy)
    assert close(overall["precision"], precision)
    assert close(overall["recall"], recall)
    assert close(overall["f1"], f1)
    assert close(overall["deferral_rate"], Fraction(3, 10))
    assert report["review_as"] == review_as
    assert report["configuration"]["mode"] == "vocabulary-only"


def test_group_and_language_breakdowns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = run_eval(
        capsys, str(fixture_csv(tmp_path)), "--lang-column", "lang", "--group-column", "src", "--review-as", "separate"
    )
    assert code == 0
    de, en = report["by_language"]["de"], report["by_language"]["en"]
    # de: TP 0, FN 1, FP 0, TN 2: nothing flagged, so precision is undefined, not 0
    assert (de["rows"], de["tp"], de["fn"], de["fp"], de["tn"]) == (3, 0, 1, 0, 2)
    assert de["precision"] is None and de["recall"] == 0.0 and close(de["accuracy"], Fraction(2, 3))
    # en: TP 2, FN 1, FP 1, TN 0, 3 deferred of 7
    assert (en["tp"], en["fn"], en["fp"], en["tn"]) == (2, 1, 1, 0)
    assert close(en["precision"], Fraction(2, 3)) and close(en["deferral_rate"], Fraction(3, 7))
    forum, mail = report["by_group"]["forum"], report["by_group"]["mail"]
    assert (forum["tp"], forum["fp"], forum["fn"], forum["tn"]) == (1, 1, 1, 1)
    assert close(forum["deferral_rate"], Fraction(1, 5))
    assert (mail["tp"], mail["fp"], mail["fn"], mail["tn"]) == (1, 0, 1, 1)
    assert mail["precision"] == 1.0 and close(mail["deferral_rate"], Fraction(2, 5))


def test_languages_are_detected_when_the_file_gives_none(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = run_eval(capsys, str(fixture_csv(tmp_path)), "--lang", "en")
    assert code == 0
    assert list(report["by_language"]) == ["en"]  # --lang applies to every row without a language column


def test_term_precision_from_term_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = run_eval(capsys, str(fixture_csv(tmp_path)), "--lang-column", "lang", "--term-column", "terms")
    assert code == 0
    terms = {t["term"]: t for t in report["terms"]}
    # "fag" was called contentious twice; the labels agree once (row 3 is a cigarette)
    assert terms["fag"] | {} == {
        "term": "fag", "hits": 2, "contentious": 2, "correct": 1, "undetermined": 0, "missed": 0, "precision": 0.5
    }  # fmt: skip
    assert terms["faggots"]["precision"] == 1.0
    # "crippled" was never decided: no precision, and its one labelled contentious use is missed
    assert terms["crippled"] | {} == {
        "term": "crippled", "hits": 3, "contentious": 0, "correct": 0, "undetermined": 3, "missed": 1,
        "precision": None,
    }  # fmt: skip


def test_jsonl_with_span_labels_and_named_label_values(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = run_eval(
        capsys,
        str(fixture_jsonl(tmp_path)),
        *("--text-column", "post", "--label-column", "verdict", "--positive", "hateful", "--negative", "fine"),
        *("--lang-column", "language", "--span-column", "spans", "--review-as", "negative"),
    )
    assert code == 0
    assert close(report["overall"]["precision"], Fraction(2, 3))
    assert close(report["overall"]["recall"], Fraction(2, 5))
    terms = {t["term"]: t for t in report["terms"]}
    assert (terms["fag"]["correct"], terms["fag"]["contentious"]) == (1, 2)
    assert terms["crippled"]["missed"] == 1


def test_worst_errors_show_the_texts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, report, _ = run_eval(capsys, str(fixture_csv(tmp_path)), "--lang-column", "lang")
    assert code == 0
    assert [(e["line"], e["text"]) for e in report["false_positives"]] == [(4, "he lit a fag outside")]
    assert [e["text"] for e in report["false_negatives"]] == ["you people are vermin", "geh weg"]


def test_text_output_names_the_figures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["eval", str(fixture_csv(tmp_path)), "--vocab", VOCAB, "--no-cache", *RULES_ONLY, "--lang-column", "lang"]
    )
    out, _ = capsys.readouterr()
    assert code == 0
    assert "precision      66.7%" in out
    assert "deferral rate  30.0%" in out
    assert "positive  2        2            1             0" in out


def only_faggot_vocabulary(tmp_path: Path) -> Path:
    folder = tmp_path / "narrow"
    folder.mkdir()
    (folder / "en.yaml").write_text(
        "format: unerase-vocabulary/1\nlanguage: en\nissues:\n"
        "  - id: en-faggot\n    categories: [sexual-orientation]\n"
        "    description: A slur aimed at gay men (a test entry).\n"
        "    sources: [https://en.wiktionary.org/wiki/faggot]\n"
        "    terms: [faggot, faggots, fag, fags]\n",
        encoding="utf-8",
    )
    return folder


def test_compare_two_vocabularies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    narrow = only_faggot_vocabulary(tmp_path)
    other = tmp_path / "narrow.toml"
    other.write_text(f'vocabularies = ["{narrow.name}"]\nthreshold = 0.5\n', encoding="utf-8")
    code, reports, _ = run_eval(
        capsys, str(fixture_csv(tmp_path)), "--lang-column", "lang", "--compare", str(other), "--review-as", "negative"
    )
    assert code == 0
    first, second = reports
    assert (first["name"], second["name"]) == ("current", "narrow")
    assert first["configuration"]["vocabulary_version"] != second["configuration"]["vocabulary_version"]
    assert second["settings"]["vocabularies"] == [str(narrow)]  # relative to the TOML file's folder
    # without "crippled" the deferred rows become not flagged; the narrow vocabulary has no German, so the three
    # German rows cannot be analysed: they are errors, counted neither right nor wrong
    assert second["overall"]["table"] == {
        "positive": {"flagged": 2, "not_flagged": 2, "needs_review": 0, "error": 1},
        "negative": {"flagged": 1, "not_flagged": 2, "needs_review": 0, "error": 2},
    }
    assert [f["line"] for f in second["failures"]] == [9, 10, 11]
    assert "unsupported-language" in second["failures"][0]["message"]
    assert second["overall"]["deferral_rate"] == 0.0
    assert first["overall"]["deferral_rate"] == 0.3
    args = ["eval", str(fixture_csv(tmp_path)), "--vocab", VOCAB, "--no-cache", *RULES_ONLY, "--lang-column", "lang"]
    code = main([*args, "--compare", str(other)])
    out, _ = capsys.readouterr()
    assert code == 0
    assert "               current  narrow  change" in out
    assert "deferral rate  30.0%    0.0%    -30.0 pt" in out


# --- bad files --------------------------------------------------------------------------------------------


def error_of(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> str:
    code = main(["eval", str(path), "--vocab", VOCAB, "--no-cache", *RULES_ONLY, *args])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    return err


def test_missing_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fixture_csv(tmp_path)
    err = error_of(capsys, path, "--label-column", "gold")
    assert f"{path}: line 1, column 'gold': the header has no such column for the labels" in err
    assert "columns found: 'text', 'label', 'lang', 'src', 'terms'" in err


def test_unknown_label_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("text,label\nfirst post,1\nsecond post,maybe\n", encoding="utf-8")
    err = error_of(capsys, path)
    assert f"{path}: line 3, column 'label': the label 'maybe' is not known" in err
    assert "positive: 1, true, yes, hateful; negative: 0, false, no, not_hateful" in err


def test_unknown_label_value_in_jsonl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text('{"text": "a", "label": "hateful"}\n{"text": "b", "label": null}\n', encoding="utf-8")
    err = error_of(capsys, path, "--positive", "hateful", "--negative", "ok")
    assert f"{path}: line 2, column 'label': the label '' is not known" in err


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("\n  \n", encoding="utf-8")
    err = error_of(capsys, path)
    assert f"{path}: line 1: the file is empty" in err
    header_only = tmp_path / "header.csv"
    header_only.write_text("text,label\n", encoding="utf-8")
    assert f"{header_only}: line 2: the file has a header but no rows" in error_of(capsys, header_only)


def test_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("text,label\nnice post,0\nun caf\u00e9 noir,0\n".encode("latin-1"))
    err = error_of(capsys, path)
    assert f"{path}: line 3, column 7: byte 0xe9 is not valid UTF-8" in err


def test_bad_span_and_bad_json(tmp_path: Path) -> None:
    columns = Columns(spans="spans")
    with pytest.raises(LabelledFileError, match=r"f.csv: line 2, column 'spans': 'x' is not a span"):
        parse_labelled(b"text,label,spans\nhello,1,x\n", "f.csv", columns, Labels())
    with pytest.raises(LabelledFileError, match=r"f.jsonl: line 1, column 10: not valid JSON"):
        parse_labelled(b'{"text": }\n', "f.jsonl", Columns(), Labels())


def test_low_scores_are_not_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "wrong.csv"
    path.write_text("text,label\nwhat a fag he is,0\nnice weather,1\n", encoding="utf-8")
    code, report, _ = run_eval(capsys, str(path), "--lang", "en")
    assert code == 0
    assert report["overall"]["accuracy"] == 0.0


def test_a_model_backend_decides_what_the_vocabulary_cannot(tmp_path: Path) -> None:
    """The same rows through a scripted backend (NOT a model: it answers from a script): "crippled" is contentious
    in "it crippled him" and neutral beside a storm or a strike; the term-free check calls "vermin" an attack."""
    import asyncio
    from collections.abc import Sequence

    from engine.analysis import BackendRouter
    from engine.cli.evaluate import run_evaluation
    from engine.llm.backend import Message
    from engine.pipeline import PipelineConfig
    from tests.support.scripted_backend import ScriptedLLMBackend, default_answer, stage_of

    def answer(messages: Sequence[Message]) -> str:
        text = messages[-1].content
        # (the prompt also quotes the entry's description, which has "the strike crippled the port" as its example of
        # the neutral sense: the one contentious sentence is recognised instead)
        if stage_of(messages) == "disambiguation" and "it crippled him" not in text:
            return "<reasoning>weather</reasoning><verdict>neutral</verdict><explanation>A storm.</explanation>"
        if stage_of(messages) == "targeting" and "vermin" in text:
            return (
                "<reasoning>dehumanising</reasoning><verdict>hateful</verdict><targets>ethnicity</targets>"
                "<explanation>Calls people vermin.</explanation>"
            )
        return default_answer(messages)

    columns = Columns(lang="lang")
    rows = parse_labelled(fixture_csv(tmp_path).read_bytes(), "labelled.csv", columns, Labels())
    config = PipelineConfig(vocabularies=(VOCAB,), use_cache=False)
    backend = ScriptedLLMBackend(answer, model_id="scripted:eval")
    report = asyncio.run(run_evaluation(rows, config, router=BackendRouter(backend)))
    assert report.info.models == ("scripted:eval",) and report.info.mode == "fast"
    # flagged: rows 1, 2, 4 (crippled, contentious), 7 (vermin) and 3 (an unambiguous term needs no model)
    assert report.overall.table["positive"] == {"flagged": 4, "not_flagged": 1, "needs_review": 0, "error": 0}
    assert report.overall.table["negative"] == {"flagged": 1, "not_flagged": 4, "needs_review": 0, "error": 0}
    assert report.overall.precision == report.overall.recall == 0.8
    assert report.overall.deferral_rate == 0.0


def test_settings_files_are_checked(tmp_path: Path) -> None:
    from engine.errors import UneraseError
    from engine.pipeline import PipelineConfig

    base = PipelineConfig()
    bad = tmp_path / "bad.toml"
    bad.write_text("mode = [", encoding="utf-8")
    with pytest.raises(UneraseError, match=r"bad.toml: not valid TOML"):
        base.with_toml(bad)
    wrong = tmp_path / "wrong.toml"
    wrong.write_text('mode = "quick"\n', encoding="utf-8")
    with pytest.raises(UneraseError, match=r"wrong.toml: mode 'quick' is not known; accepted: fast, thorough"):
        base.with_toml(wrong)
    typed = tmp_path / "typed.toml"
    typed.write_text('threshold = "high"\n', encoding="utf-8")
    with pytest.raises(UneraseError, match=r"typed.toml: setting 'threshold' is 'high'; accepted: a number"):
        base.with_toml(typed)
    good = tmp_path / "good.toml"
    good.write_text(
        'llm_backend = "openai"\nllm_model = "m"\nthreshold = 0.7\nport = 9000\n'
        '[llm_languages.el]\nbackend = "openai"\nmodel = "greek"\nbase_url = "http://127.0.0.1:9/v1"\n',
        encoding="utf-8",
    )
    config = base.with_toml(good)
    assert (config.name, config.model.backend, config.model.model, config.threshold) == ("good", "openai", "m", 0.7)
    assert config.per_language[0][0] == "el" and config.per_language[0][1].model == "greek"
    assert config.mode == "fast"  # not in the file: kept from the configuration it was applied to


def test_a_labelled_line_nested_too_deeply_is_a_clear_error() -> None:
    data = b'{"text": "nice post", "label": 0}\n' + b"[" * 100_000 + b"\n"
    with pytest.raises(LabelledFileError, match=r"f.jsonl: line 2: the JSON is nested too deeply to read"):
        list(parse_labelled(data, "f.jsonl", Columns(), Labels()))


def test_a_labelled_line_with_a_lone_surrogate_is_a_clear_error() -> None:
    data = b'{"text": "nice post", "label": 0}\n{"text": "half \\ud800 a pair", "label": 1}\n'
    with pytest.raises(LabelledFileError, match=r"f.jsonl: line 2, column 'text': holds a lone UTF-16 surrogate"):
        list(parse_labelled(data, "f.jsonl", Columns(), Labels()))
