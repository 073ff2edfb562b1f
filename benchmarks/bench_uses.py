"""Benchmark of use versus mention: do quoted, reported and reclaimed uses end not flagged, and attacks flagged?

    python benchmarks/bench_uses.py [--languages en,fr,...] [--json PATH]

Vocabulary-only analyses (no language model) of the team's corpus sentences, against the shipped vocabularies,
twice in one run: with the use rules (prompts/<lang>/use.yaml, engine/uses.py) and with them off, which is the
behaviour before the rules existed (every hit an attack). Two sets of sentences:

- `uses.yaml` (tests/corpora/<lang>/uses.yaml): a use per hit, written together with the rules (so not held
  out); a sentence is a mention when none of its hits is an attack, an attack when one is.
- held out: the other corpus files, written before the rules, by kind: quoted, reclaimed and counter-speech
  sentences are mentions, hateful ones attacks (some of those report an attack, e.g. fans shouting a slur:
  a careful reader may call them mentions, so this set's attack figure is a floor).

Reported per language and overall: the share of mentions whose decision is not_flagged ("cleared"), the share
of mentions not flagged at all (not_flagged or needs_review), and the share of attacks flagged. Targets: cleared
≥ 0.90, attacks flagged ≥ 0.95.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.analysis import Analyzer  # noqa: E402
from engine.detector import Detector  # noqa: E402
from engine.events import Decision  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.uses import UseDetector  # noqa: E402
from engine.vocabulary.loader import load_vocabulary  # noqa: E402

CORPORA = ROOT / "tests" / "corpora"
LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")
MENTION_KINDS = {"quoted", "reported", "reclaimed", "historical", "counter-speech"}
ATTACK_KINDS = {"hateful"}


@dataclass(frozen=True)
class Item:
    language: str
    text: str
    mention: bool  # False: an attack
    held_out: bool


def items(languages: tuple[str, ...]) -> list[Item]:
    found = []
    for language in languages:
        for path in sorted((CORPORA / language).glob("*.yaml")):
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            for sentence in data.get("sentences", []):
                hits = sentence.get("hits") or []
                if path.name == "uses.yaml":
                    uses = {hit["use"] for hit in hits}
                    found.append(Item(language, sentence["text"], "attack" not in uses, held_out=False))
                elif hits and sentence["kind"] in MENTION_KINDS | ATTACK_KINDS:
                    found.append(Item(language, sentence["text"], sentence["kind"] in MENTION_KINDS, held_out=True))
    return found


async def labels(analyzer: Analyzer, batch: list[Item]) -> list[str]:
    out = []
    for item in batch:
        events = await analyzer.collect(item.text, item.language)
        out.append(next(e for e in events if isinstance(e, Decision)).label)
    return out


def share(numerator: int, denominator: int) -> str:
    return f"{numerator / denominator:.2f} ({numerator}/{denominator})" if denominator else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--languages", default=",".join(LANGUAGES))
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args()
    languages = tuple(code.strip() for code in args.languages.split(",") if code.strip())
    corpus = items(languages)
    no_rules = Path(tempfile.mkdtemp(prefix="unerase-no-use-rules-"))  # a prompts folder without use.yaml
    started = time.perf_counter()
    # counts[set][config][language] = [mentions, cleared, not flagged, attacks, flagged]
    counts: dict[str, dict[str, dict[str, list[int]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(lambda: [0] * 5)))
    for language in languages:
        detector = Detector(load_vocabulary(shipped_vocabularies() / language))
        of_language = [i for i in corpus if i.language == language]
        for config, analyzer in (
            ("rules off (before)", Analyzer(detector, uses=UseDetector(no_rules))),
            ("use rules", Analyzer(detector)),
        ):
            for item, label in zip(of_language, asyncio.run(labels(analyzer, of_language)), strict=True):
                for name in ("uses.yaml" if not item.held_out else "held out", "all"):
                    row = counts[name][config][language]
                    if item.mention:
                        row[0] += 1
                        row[1] += label == "not_flagged"
                        row[2] += label != "flagged"
                    else:
                        row[3] += 1
                        row[4] += label == "flagged"
    report: dict[str, Any] = {}
    for name in ("uses.yaml", "held out", "all"):
        print(f"\n## {name}\n")
        print("| language | config | mentions cleared (not_flagged) | mentions not flagged | attacks flagged |")
        print("|---|---|---|---|---|")
        for config in ("rules off (before)", "use rules"):
            total = [0] * 5
            for language in languages:
                row = counts[name][config][language]
                total = [a + b for a, b in zip(total, row, strict=True)]
                print(f"| {language} | {config} | {share(row[1], row[0])} | {share(row[2], row[0])} | {share(row[4], row[3])} |")
                report.setdefault(name, {}).setdefault(config, {})[language] = row
            print(f"| **all** | {config} | {share(total[1], total[0])} | {share(total[2], total[0])} | {share(total[4], total[3])} |")
            report[name][config]["all"] = total
    print(f"\n{len(corpus)} sentences, {time.perf_counter() - started:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
