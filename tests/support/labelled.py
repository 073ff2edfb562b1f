"""A small labelled file (English and German posts, with groups, terms and spans) for the evaluation tests."""

from __future__ import annotations

from pathlib import Path

VOCAB = str(Path(__file__).resolve().parent.parent / "fixtures" / "vocab")
# the figures the evaluation tests compute by hand are those of the vocabulary and the use rules alone: the
# labelled examples and the learned uses (on by default) decide some rows otherwise (tests/test_cli_sources.py)
RULES_ONLY = ("--no-examples", "--no-learned-uses")

ROWS = [
    ("what a fag he is", "1", "en", "forum", "fag", "7-10"),
    ("faggots out", "1", "en", "mail", "faggots", "0-7"),
    ("he lit a fag outside", "0", "en", "forum", "", ""),
    ("it crippled him", "1", "en", "mail", "crippled", "3-11"),
    ("the strike crippled the port", "0", "en", "forum", "", ""),
    ("the storm crippled the town", "0", "en", "mail", "", ""),
    ("you people are vermin", "1", "en", "forum", "", ""),
    ("schönes Wetter heute", "0", "de", "mail", "", ""),
    ("der Hafen ist voll", "0", "de", "forum", "", ""),
    ("geh weg", "1", "de", "mail", "", ""),
]


def fixture_csv(tmp_path: Path) -> Path:
    lines = ["text,label,lang,src,terms"] + [f"{t},{lab},{lang},{src},{terms}" for t, lab, lang, src, terms, _ in ROWS]
    path = tmp_path / "labelled.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path
