"""Turn the team's test corpora (tests/corpora/<lang>/*.yaml) into labelled JSONL files for `unerase eval`.

    .venv/bin/python benchmarks/corpora_labelled.py --out /tmp/corpora     # one <lang>.jsonl per language
    unerase eval /tmp/corpora/en.jsonl --lang-column lang --group-column kind --term-column terms

`--files heldout24.yaml` keeps only the named files: the blind set, say, to measure a configured
model (`unerase eval … --backend openai --base-url …`) on sentences nothing was tuned on.

The label is whether a careful reader would call the sentence a derogatory use (docs/evaluation.md):
- `hateful` sentences are positive;
- `obfuscated`, `compound`, `title` and `form` sentences describe how a word is written (disguised, in a
  compound, capitalized in a heading or at a sentence start, inflected or misspelt), not how it is used: they
  are positive when at least one of their expected hits is not marked `status: neutral`;
- `neutral`, `quoted`, `reported`, `reclaimed`, `historical`, `counter-speech` and `name` sentences are negative
  (the decision rules do not flag mentions, reclaimed uses or names).
The `terms` column lists the surfaces of the hits used contentiously (not marked neutral) in positive
sentences, for precision per term; `kind` is kept as the group to break results down by.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

CORPORA = Path(__file__).resolve().parent.parent / "tests" / "corpora"
WRITTEN_FORMS = {"obfuscated", "compound", "title", "form"}


def is_positive(sentence: dict[str, Any]) -> bool:
    kind = sentence.get("kind")
    if kind == "hateful":
        return True
    if kind in WRITTEN_FORMS:
        return any(hit.get("status") != "neutral" for hit in sentence.get("hits") or [])
    return False


def labelled(language_folder: Path, files: frozenset[str] = frozenset()) -> Iterator[dict[str, Any]]:
    """The sentences of a language's corpus files (only `files`, by name, when given), labelled."""
    for path in sorted(language_folder.glob("*.yaml")):
        if path.name == "precedents.yaml":  # moderators' earlier decisions, not test sentences
            continue
        if files and path.name not in files:
            continue
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for sentence in data.get("sentences") or []:
            positive = is_positive(sentence)
            terms = [h["surface"] for h in sentence.get("hits") or [] if positive and h.get("status") != "neutral"]
            yield {
                "text": sentence["text"],
                "label": "hateful" if positive else "not_hateful",
                "lang": data.get("language", language_folder.name),
                "kind": sentence.get("kind", ""),
                "terms": terms,
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="folder for the <lang>.jsonl files")
    parser.add_argument("--files", default="", help="only these corpus files, by name (heldout24.yaml: the blind set)")
    args = parser.parse_args()
    files = frozenset(name.strip() for name in args.files.split(",") if name.strip())
    known = {path.name for path in CORPORA.glob("*/*.yaml")}
    if files - known:
        parser.error(f"no corpus file is named {', '.join(sorted(files - known))}; known: {', '.join(sorted(known))}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for folder in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
        rows = list(labelled(folder, files))
        with (out / f"{folder.name}.jsonl").open("w", encoding="utf-8") as sink:
            for row in rows:
                sink.write(json.dumps(row, ensure_ascii=False) + "\n")
        positives = sum(1 for r in rows if r["label"] == "hateful")
        print(f"{folder.name}: {len(rows)} sentences, {positives} labelled hateful")


if __name__ == "__main__":
    main()
