"""`unerase eval --report` and `unerase audit --report`: self-contained HTML files with SVG charts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.labelled import RULES_ONLY, VOCAB, fixture_csv
from web.cli import main


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "report-cache"))


def self_contained(html: str) -> None:
    assert html.startswith("<!doctype html>")
    assert not re.search(r"<(script|link|img)\b", html)  # nothing fetched when the file is opened
    assert "<style>" in html


def test_eval_report_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "report.html"
    args = [str(fixture_csv(tmp_path)), "--vocab", VOCAB, "--no-cache", *RULES_ONLY, "--lang-column", "lang"]
    code = main(["eval", *args, "--group-column", "src", "--term-column", "terms", "--report", str(target)])
    _, err = capsys.readouterr()
    assert code == 0 and f"report written to {target}" in err
    html = target.read_text(encoding="utf-8")
    self_contained(html)
    assert html.count("<svg") == 3  # outcomes, F1 per language, F1 per group
    assert '<td data-figure="precision">66.7%</td>' in html
    assert '<td data-figure="deferral_rate">30.0%</td>' in html
    assert "<q>he lit a fag outside</q>" in html
    assert "Precision per term" in html and '<th scope="row">crippled</th>' in html


def test_audit_report_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "audit.html"
    code = main(
        ["audit", "--lang", "en", "--lang", "fr", "--vocab", VOCAB, "--no-cache", *RULES_ONLY, "--report", str(target)]
    )
    capsys.readouterr()
    assert code == 0
    html = target.read_text(encoding="utf-8")
    self_contained(html)
    assert html.count("<svg") == 1  # the test vocabulary has no French: fr is skipped, not "consistent"
    assert "en: 9 of 9 tuples decided alike" in html
    assert "Skipped, as the vocabularies do not cover them: fr." in html


def test_report_without_the_web_layer_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli import main as engine_main

    code = engine_main(
        ["eval", str(fixture_csv(tmp_path)), "--vocab", VOCAB, *RULES_ONLY, "--report", str(tmp_path / "r.html")]
    )
    _, err = capsys.readouterr()
    assert code == 2 and "--report needs the web package" in err


def test_eval_with_a_sites_term_rules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--site KEY`: a site whose moderators excluded "fag" (a cigarette on their forum) flags row 1 no more."""
    from sqlmodel import Session

    from web.models import SiteTermRule
    from web.settings import get_settings

    monkeypatch.setenv("UNERASE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        assert main(["site", "add", "--name", "Smokers' corner", "--threshold", "0.5", "--json"]) == 0
        key = json.loads(capsys.readouterr().out)["key"]
        from web.cli import _sites

        with Session(_sites().store.engine) as session:
            session.add(SiteTermRule(site_key=key, term_id="en-faggot#fag", rule="exclude", moderator="test"))
            session.commit()
        args = [
            str(fixture_csv(tmp_path)),
            "--vocab",
            VOCAB,
            "--no-cache",
            *RULES_ONLY,
            "--lang-column",
            "lang",
            "--json",
        ]
        assert main(["eval", *args]) == 0
        plain = json.loads(capsys.readouterr().out)
        assert main(["eval", *args, "--site", key]) == 0
        scoped = json.loads(capsys.readouterr().out)
        assert plain["overall"]["table"]["negative"]["flagged"] == 1  # "he lit a fag outside"
        assert scoped["overall"]["table"]["negative"]["flagged"] == 0
        assert scoped["overall"]["table"]["positive"]["flagged"] == 1  # only "faggots out" is left
        assert main(["eval", *args, "--site", "nope"]) == 2
        assert "no site has the key 'nope'" in capsys.readouterr().err
    finally:
        get_settings.cache_clear()


def test_compare_report_shows_the_change(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    strict = tmp_path / "strict.toml"
    strict.write_text("threshold = 0.95\n", encoding="utf-8")  # vocabulary-only confidence is at most 0.9
    target = tmp_path / "compare.html"
    args = [str(fixture_csv(tmp_path)), "--vocab", VOCAB, "--no-cache", *RULES_ONLY, "--lang-column", "lang"]
    assert main(["eval", *args, "--compare", str(strict), "--report", str(target)]) == 0
    capsys.readouterr()
    html = target.read_text(encoding="utf-8")
    assert '<td data-change="deferral_rate">+70.0 pt</td>' in html  # 30% deferred, then all of them
    assert '<td data-change="precision">–</td>' in html  # nothing flagged under τ 0.95: no precision
