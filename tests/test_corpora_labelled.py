"""benchmarks/corpora_labelled.py: the team's corpora as labelled rows for `unerase eval`, whole or by file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.corpora_labelled import CORPORA, labelled

ROOT = Path(__file__).resolve().parent.parent


def test_only_the_files_asked_for_and_every_mention_kind_negative() -> None:
    rows = list(labelled(CORPORA / "en", frozenset({"heldout14.yaml"})))
    assert len(rows) == 42  # one set's sentences, nothing else
    kinds = {row["kind"]: row["label"] for row in rows}
    assert kinds.pop("hateful") == "hateful"
    assert kinds == dict.fromkeys(("quoted", "reported", "counter-speech", "reclaimed", "historical"), "not_hateful")
    assert all(row["terms"] for row in rows if row["label"] == "hateful")


def test_the_script_writes_one_file_per_language_and_refuses_an_unknown_file(tmp_path: Path) -> None:
    script = [sys.executable, str(ROOT / "benchmarks" / "corpora_labelled.py"), "--out", str(tmp_path)]
    done = subprocess.run([*script, "--files", "heldout15.yaml"], capture_output=True, text=True, check=True)
    assert "pt: 42 sentences, 14 labelled hateful" in done.stdout
    lines = (tmp_path / "el.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 42 and {json.loads(line)["lang"] for line in lines} == {"el"}
    refused = subprocess.run([*script, "--files", "heldout99.yaml"], capture_output=True, text=True)
    assert refused.returncode == 2 and "no corpus file is named heldout99.yaml" in refused.stderr
