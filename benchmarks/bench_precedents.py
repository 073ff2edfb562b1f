"""Benchmark of precedent decisions: how many held-out reviewed hits the rule decides, and how many correctly.

    python benchmarks/bench_precedents.py [--splits 10] [--seed 7] [--test-share 0.3]

Reviewed items come from the team's corpora (tests/corpora/*/*.yaml): every expected hit that carries a
`status` (contentious / neutral, given for ambiguous terms only) is a moderator verdict. The shipped detector
finds each one in its sentence, so offsets, term ids and contexts are the real ones. Two evaluations:

- held-out splits: per term, a seeded shuffle puts `--test-share` of its items aside; the rest are stored as
  precedents in a fresh database; each held-out item is looked up and the rule asked. Counts are summed over
  `--splits` splits with different seeds.
- leave-one-out: every item is stored; each is looked up with its own sentence's precedents left out.

Reported for several rules (minimum support, agreement): coverage (share of held-out items decided) and
precision (share of decided ones decided correctly), overall and per language. SQLite always; PostgreSQL too
when UNERASE_TEST_DATABASE_URL names a server. JSON goes to benchmarks/results/precedents-<date>.json.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402
from sqlalchemy import delete  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session  # noqa: E402

from engine.detector import Detector  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.precedents import Match, PrecedentRule, context_window  # noqa: E402
from engine.vocabulary.loader import load_vocabulary  # noqa: E402
from web import precedents  # noqa: E402
from web.db import make_engine  # noqa: E402
from web.models import AnalysisRecord, Precedent  # noqa: E402

CORPORA = ROOT / "tests" / "corpora"
LIMIT = 5  # precedents looked up per hit, as DatabasePrecedents does

DEFAULT = "support 3, unanimous (default)"
RULES: dict[str, PrecedentRule] = {
    # not a candidate: how often the nearest similar precedents alone are right, whatever their number
    "support 1, any overlap (diagnostic)": PrecedentRule(min_support=1, min_similarity=0.0001),
    "support 2, unanimous": PrecedentRule(min_support=2),
    DEFAULT: PrecedentRule(),
    "support 4, unanimous": PrecedentRule(min_support=4),
    "support 3, >=0.75 and 1 dissent": PrecedentRule(min_agreement=0.75, max_dissent=1),
    "support 3, unanimous, any overlap": PrecedentRule(min_similarity=0.0001),
    "support 3, unanimous, similarity 0.2": PrecedentRule(min_similarity=0.2),
    "support 3, unanimous, similarity 0.1": PrecedentRule(min_similarity=0.1),
}


@dataclass(frozen=True)
class Item:
    """One reviewed hit: a corpus sentence, where the detector found the term, and the human verdict."""

    analysis_id: str
    language: str
    text: str
    hit: dict[str, Any]  # the fields web.precedents.from_document reads
    verdict: str

    @property
    def term_id(self) -> str:
        return str(self.hit["term_id"])


def reviewed_items() -> tuple[list[Item], int]:
    """The corpora's labelled hits the shipped detector finds (and how many labelled hits it did not find)."""
    items, missed = [], 0
    detectors: dict[str, Detector] = {}
    for path in sorted(CORPORA.glob("*/*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        language = data["language"]
        if language not in detectors:
            detectors[language] = Detector(load_vocabulary(shipped_vocabularies() / language))
        for n, sentence in enumerate(data["sentences"], start=1):
            labelled = [h for h in sentence.get("hits") or [] if h.get("status")]
            if not labelled:
                continue
            text = sentence["text"]
            found = {(h.issue.id, h.start, h.end): h for h in detectors[language].detect(text, language).hits}
            analysis_id = f"{language}-{path.stem}-{n}"
            for expected in labelled:
                start = -1
                for _ in range(int(expected.get("occurrence", 1))):
                    start = text.find(expected["surface"], start + 1)
                hit = found.get((expected["issue"], start, start + len(expected["surface"])))
                if hit is None:
                    missed += 1
                    continue
                fields = {k: v for k, v in hit.to_dict(full=False).items() if k != "categories"}
                items.append(Item(analysis_id, language, text, fields, expected["status"]))
    return items, missed


def split(items: Sequence[Item], seed: int, test_share: float) -> tuple[list[Item], list[Item]]:
    """Per term, a seeded `test_share` of its items is held out (at least one when it has two or more)."""
    by_term: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_term[item.term_id].append(item)
    rng = random.Random(seed)
    train, test = [], []
    for term in sorted(by_term):
        group = sorted(by_term[term], key=lambda i: (i.analysis_id, i.hit["id"]))
        rng.shuffle(group)
        held = 0 if len(group) < 2 else max(1, round(test_share * len(group)))
        test.extend(group[:held])
        train.extend(group[held:])
    return train, test


def store(engine: Engine, items: Sequence[Item]) -> None:
    """The items as moderators' precedents, in a database emptied first."""
    with Session(engine) as session:
        session.exec(delete(Precedent))
        session.exec(delete(AnalysisRecord))
        for analysis_id, text in sorted({(i.analysis_id, i.text) for i in items}):
            session.add(AnalysisRecord(id=analysis_id, text=text))
        session.commit()
    rows: list[Precedent] = []
    for item in items:
        document = {"id": item.analysis_id, "text": item.text, "language": item.language, "hits": [item.hit]}
        rows.extend(precedents.from_document(document, {item.hit["id"]: item.verdict}, "corpus", None))
    precedents.record(engine, rows)


@dataclass
class Tally:
    held_out: int = 0
    decided: int = 0
    correct: int = 0

    def add(self, decided: bool, correct: bool) -> None:
        self.held_out += 1
        self.decided += decided
        self.correct += correct

    def to_dict(self) -> dict[str, Any]:
        return {
            "held_out": self.held_out,
            "decided": self.decided,
            "correct": self.correct,
            "coverage": self.decided / self.held_out if self.held_out else None,
            "precision": self.correct / self.decided if self.decided else None,
        }


Tallies = dict[str, dict[str, Tally]]  # rule -> language ("all" too) -> counts


GROUPINGS = ("term", "issue")  # precedents of the same term id, or of any term of the same issue


def group_of(item: Item, grouping: str) -> str:
    return f"{item.language}\x00" + (item.term_id if grouping == "term" else str(item.hit["issue_id"]))


def evaluate(engine: Engine, stored: Sequence[Item], test: Sequence[Item], tallies: Tallies) -> None:
    """Asks every rule about every held-out item (one lookup per item and grouping: the rules share its
    matches). `eligible` counts the items with at least three stored precedents of their group at all."""
    for grouping in GROUPINGS:
        sizes: dict[str, list[str]] = defaultdict(list)
        for item in stored:
            sizes[group_of(item, grouping)].append(item.analysis_id)
        for item in test:
            context = context_window(item.text, item.hit["start"], item.hit["end"])
            found = precedents.similar(
                engine,
                item.term_id,
                item.language,
                context,
                None,
                LIMIT,
                surface=item.hit["surface"],
                exclude_analysis=item.analysis_id,  # its own sentence (another hit of it) would be a leak
                issue_id=str(item.hit["issue_id"]) if grouping == "issue" else None,
            )
            matches = [Match(str(p.id), p.verdict, score) for p, score in found]
            others = sum(1 for a in sizes[group_of(item, grouping)] if a != item.analysis_id)
            for key in ("all", item.language):
                tallies[f"{grouping}: eligible"][key].add(others >= 3, False)
            for name, rule in RULES.items():
                agreement = rule.apply(matches)
                decided = agreement is not None
                correct = agreement is not None and agreement.verdict == item.verdict
                for key in ("all", item.language):
                    tallies[f"{grouping}: {name}"][key].add(decided, correct)


def new_tallies() -> Tallies:
    return defaultdict(lambda: defaultdict(Tally))


def run(engine: Engine, items: Sequence[Item], splits: int, seed: int, test_share: float) -> dict[str, Tallies]:
    held_out = new_tallies()
    for n in range(splits):
        train, test = split(items, seed + n, test_share)
        store(engine, train)
        evaluate(engine, train, test, held_out)
    leave_one_out = new_tallies()
    store(engine, items)
    evaluate(engine, items, items, leave_one_out)
    return {"held_out": held_out, "leave_one_out": leave_one_out}


def engines(workdir: Path) -> Iterator[tuple[str, Engine]]:
    """SQLite in `workdir`, then PostgreSQL in a throwaway schema when UNERASE_TEST_DATABASE_URL is set."""
    engine = make_engine(f"sqlite:///{workdir / 'precedents.sqlite'}")
    yield "sqlite", engine
    engine.dispose()
    url = os.environ.get("UNERASE_TEST_DATABASE_URL", "").strip()
    if url:
        from tests.postgres import fresh_schema_url

        with fresh_schema_url(url) as schema:
            engine = make_engine(schema.url)
            try:
                yield "postgresql", engine
            finally:
                engine.dispose()


def table(title: str, tallies: Tallies, languages: Sequence[str]) -> None:
    print(f"\n{title}")
    print(f"  {'grouping: rule':<46} {'held out':>8} {'decided':>8} {'coverage':>9} {'precision':>10}")
    for name, per in tallies.items():
        total = per["all"]
        coverage = f"{total.decided / total.held_out:.1%}" if total.held_out else "-"
        precision = (
            "" if name.endswith("eligible") else f"{total.correct / total.decided:.1%}" if total.decided else "-"
        )
        print(f"  {name:<46} {total.held_out:>8} {total.decided:>8} {coverage:>9} {precision:>10}")
    for grouping in GROUPINGS:
        default = tallies[f"{grouping}: {DEFAULT}"]
        print(
            f"  per language, {grouping}, default rule (correct/decided of held out): "
            + "; ".join(
                f"{lang} {default[lang].correct}/{default[lang].decided} of {default[lang].held_out}"
                for lang in languages
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", type=int, default=10, help="held-out splits, each with its own seed")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--test-share", type=float, default=0.3)
    parser.add_argument("--json", type=Path, default=None, help="default: benchmarks/results/precedents-<date>.json")
    args = parser.parse_args()

    items, missed = reviewed_items()
    per_term: dict[str, int] = defaultdict(int)
    for item in items:
        per_term[item.term_id] += 1
    languages = sorted({i.language for i in items})
    sizes = sorted(per_term.values())
    print(
        f"reviewed items: {len(items)} labelled hits found by the detector ({missed} labelled hits not found), "
        f"{len(per_term)} terms, {sum(1 for n in sizes if n >= 4)} terms with 4 or more items "
        f"(median {sizes[len(sizes) // 2]} per term, most {sizes[-1]})"
    )
    print("  per language: " + ", ".join(f"{lang} {sum(1 for i in items if i.language == lang)}" for lang in languages))
    print(
        f"  verdicts: {sum(1 for i in items if i.verdict == 'contentious')} contentious, "
        f"{sum(1 for i in items if i.verdict == 'neutral')} neutral"
    )
    results: dict[str, Any] = {
        "date": datetime.date.today().isoformat(),
        "items": len(items),
        "labelled_hits_not_found": missed,
        "terms": len(per_term),
        "items_per_language": {lang: sum(1 for i in items if i.language == lang) for lang in languages},
        "splits": args.splits,
        "seed": args.seed,
        "test_share": args.test_share,
        "limit": LIMIT,
        "rules": {name: vars(rule) for name, rule in RULES.items()},
        "databases": {},
    }
    with tempfile.TemporaryDirectory() as workdir:
        for name, engine in engines(Path(workdir)):
            started = time.perf_counter()
            outcome = run(engine, items, args.splits, args.seed, args.test_share)
            elapsed = time.perf_counter() - started
            print(f"\n== {name} ({elapsed:.1f} s)")
            table(
                f"held out: {args.test_share:.0%} per term, {args.splits} seeded splits, counts summed",
                outcome["held_out"],
                languages,
            )
            table("leave one out (each item against all other sentences)", outcome["leave_one_out"], languages)
            results["databases"][name] = {
                "seconds": elapsed,
                **{
                    evaluation: {rule: {lang: t.to_dict() for lang, t in per.items()} for rule, per in tallies.items()}
                    for evaluation, tallies in outcome.items()
                },
            }
    path = args.json or ROOT / "benchmarks" / "results" / f"precedents-{results['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print(f"\nsaved {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
