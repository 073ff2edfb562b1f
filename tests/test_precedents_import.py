"""`unerase precedents import` (a site's past moderation decisions as precedents) and `unerase analyze/detect
--site KEY` (the site's term rules, precedents and examples applied as the web app applies them). Real SQLite
files, the shipped vocabularies, the real embedding model where the example source runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlmodel import Session, select

from web.cli import main as cli_main
from web.db import make_engine
from web.models import Precedent, SiteTermRule
from web.settings import get_settings

RAIL = [
    "The rail strike crippled the network again on Monday morning.",
    "The rail strike crippled the network again on Tuesday evening.",
    "The rail strike crippled the network again on Friday night.",
]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Iterator[str]:
    monkeypatch.setenv("UNERASE_DATA_DIR", str(tmp_path / "data"))
    get_settings.cache_clear()
    try:
        assert cli_main(["site", "add", "--name", "Old forum", "--json"]) == 0
        key = json.loads(capsys.readouterr().out)["key"]
        yield key
    finally:
        get_settings.cache_clear()


def stored(site: str) -> list[Precedent]:
    engine = make_engine(get_settings().resolved_database_url)
    try:
        with Session(engine) as session:
            return list(session.exec(select(Precedent).where(Precedent.site_key == site)))
    finally:
        engine.dispose()


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli_main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def import_args(path: Path, site: str, *extra: str) -> list[str]:
    return [
        "precedents",
        "import",
        str(path),
        "--site",
        site,
        "--text-column",
        "post",
        "--term-column",
        "word",
        "--verdict-column",
        "decision",
        *extra,
    ]


def test_csv_import_uses_good_rows_and_refuses_each_bad_one_with_its_line(
    site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "decisions.csv"
    path.write_text(
        "post,word,decision,lang\n"
        f'"{RAIL[0]}",crippled,neutral,en\n'
        '"Go away, you crippled freak.",Crippled,Contentious,en\n'  # the verdict's case does not matter
        '"A quiet day at the beach.",crippled,neutral,en\n'
        '"Some crippled text",crippled,maybe,en\n'
        ",crippled,neutral,en\n"
        '"Ein schöner Tag am See.",Tag,neutral,de\n'
        '"Bonjour crippled",crippled,neutral,xx\n'
        '"A text written\nover two lines, crippled by the storm.",crippled,neutral,en\n',
        encoding="utf-8",
    )
    code, out, _ = run(capsys, *import_args(path, site, "--lang-column", "lang"))
    assert code == 3  # some rows were refused
    assert out.splitlines() == [
        f"8 rows read: 3 used (3 precedents for site {site}), 5 refused",
        "  line 4: term 'crippled' not found in the text",
        "  line 5: unknown verdict 'maybe'; accepted: contentious, neutral",
        "  line 6: empty value in column 'post'",
        "  line 7: term 'Tag' is in the text but is not a vocabulary term there (terms found: none)",
        "  line 8: language 'xx' is not supported; supported: de, el, en, fr, it, nl, pt",
    ]
    rows = stored(site)
    assert sorted((p.surface, p.verdict, p.moderator) for p in rows) == [
        ("crippled", "contentious", "import"),
        ("crippled", "neutral", "import"),
        ("crippled", "neutral", "import"),
    ]
    assert all(p.language == "en" and p.context for p in rows)
    # the same file again replaces its precedents instead of doubling them
    assert run(capsys, *import_args(path, site, "--lang-column", "lang"))[0] == 3
    assert len(stored(site)) == 3


def test_jsonl_import_refuses_unreadable_lines(site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "decisions.jsonl"
    lines = [
        json.dumps({"post": RAIL[1], "word": "crippled", "decision": "neutral"}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"post": RAIL[2], "decision": "neutral"}),
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, *import_args(path, site, "--lang", "en", "--json"))
    report = json.loads(out)
    assert code == 3
    assert (report["rows"], report["used"], report["precedents"]) == (4, 1, 1)
    assert [(r["line"], r["reason"].split(" (")[0]) for r in report["refused"]] == [
        (2, "not valid JSON"),
        (3, "not a JSON object"),
        (4, "missing column 'word'"),
    ]


def test_the_whole_import_is_refused_for_an_unknown_site_a_missing_column_or_file_type(
    site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "decisions.csv"
    path.write_text(f'post,word\n"{RAIL[0]}",crippled\n', encoding="utf-8")
    code, _, err = run(capsys, *import_args(path, "s_nope"))
    assert code == 2 and "no site has the key 's_nope'" in err
    code, _, err = run(capsys, *import_args(path, site))
    assert code == 2 and "no column named 'decision'; its columns: post, word" in err
    other = tmp_path / "decisions.xlsx"
    other.write_text("x", encoding="utf-8")
    code, _, err = run(capsys, *import_args(other, site))
    assert code == 2 and "the file type is not known; accepted: .csv, .jsonl, .ndjson" in err
    assert stored(site) == []


def verdicts_of(out: str) -> dict[str, dict[str, object]]:
    return {hit["surface"]: hit["verdict"] for hit in json.loads(out)["hits"]}


def test_analyze_with_site_decides_from_the_imported_precedents(
    site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "decisions.csv"
    path.write_text("post,word,decision\n" + "".join(f'"{t}",crippled,neutral\n' for t in RAIL), encoding="utf-8")
    assert run(capsys, *import_args(path, site, "--lang", "en"))[0] == 0
    text = "The rail strike crippled the network again on Sunday afternoon."
    code, out, _ = run(capsys, "analyze", text, "--lang", "en", "--json", "--site", site)
    assert code == 0
    verdict = verdicts_of(out)["crippled"]
    assert verdict["decided_by"] == "precedent" and verdict["status"] == "neutral"
    assert len(verdict["precedents"]) == 3  # type: ignore[arg-type]
    assert json.loads(out)["decision"]["label"] == "not_flagged"
    # without the site, its moderators' decisions are not used
    code, out, _ = run(capsys, "analyze", text, "--lang", "en", "--json")
    assert code == 0 and verdicts_of(out)["crippled"]["decided_by"] != "precedent"
    # the site's threshold applies (vocabulary-only "not flagged" is worth 0.6), unless --threshold is given
    assert run(capsys, "site", "update", site, "--threshold", "0.7")[0] == 0
    decision = json.loads(run(capsys, "analyze", text, "--lang", "en", "--json", "--site", site)[1])["decision"]
    assert decision["label"] == "needs_review" and any("deferred" in r for r in decision["reasons"])
    argv = ("analyze", text, "--lang", "en", "--json", "--site", site, "--threshold", "0.5")
    assert json.loads(run(capsys, *argv)[1])["decision"]["label"] == "not_flagged"


def test_detect_and_analyze_with_site_apply_its_term_rules(site: str, capsys: pytest.CaptureFixture[str]) -> None:
    text = "The storm crippled the rail network."
    code, out, _ = run(capsys, "detect", text, "--lang", "en", "--json")
    hit = next(h for h in json.loads(out)["hits"] if h["surface"] == "crippled")
    engine = make_engine(get_settings().resolved_database_url)
    with Session(engine) as session:
        session.add(SiteTermRule(site_key=site, term_id=hit["term_id"], rule="exclude", moderator="ana"))
        session.commit()
    engine.dispose()
    code, out, _ = run(capsys, "detect", text, "--lang", "en", "--json", "--site", site)
    assert code == 0 and "crippled" not in [h["surface"] for h in json.loads(out)["hits"]]
    code, out, _ = run(capsys, "analyze", text, "--lang", "en", "--json", "--site", site)
    assert code == 0 and "crippled" not in verdicts_of(out)
    code, _, err = run(capsys, "analyze", text, "--site", "s_nope")
    assert code == 2 and "no site has the key 's_nope'" in err


def test_a_jsonl_line_nested_too_deeply_is_refused_not_a_crash(
    site: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "decisions.jsonl"
    lines = ["[" * 100_000, json.dumps({"post": RAIL[1], "word": "crippled", "decision": "neutral"})]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, _ = run(capsys, *import_args(path, site, "--lang", "en", "--json"))
    report = json.loads(out)
    assert code == 3
    assert (report["rows"], report["used"]) == (2, 1)
    assert report["refused"] == [{"line": 1, "reason": "the JSON is nested too deeply to read"}]
