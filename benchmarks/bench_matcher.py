"""Benchmark of the vocabulary pipeline (no LLM): throughput, load time, peak memory.

    python benchmarks/bench_matcher.py [--chars 5000000] [--rounds 5]

Vocabulary: the imported DETOEX English vocabulary (3,903 entries) when ../shared/data is
beside the project, otherwise the shipped English vocabulary (said in the output). The corpus
is generated deterministically (benchmarks/corpus.py). Every speed is a median over rounds in
which the raw tokenizer and the matcher run side by side, so their ratio is fair on a noisy
machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.corpus import generate  # noqa: E402
from engine.detector import Detector  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.text.tokenizer import RegexTokenizer  # noqa: E402
from engine.vocabulary.loader import load_vocabulary  # noqa: E402
from engine.vocabulary.model import Vocabulary  # noqa: E402
from engine.vocabulary.writer import write_vocabulary  # noqa: E402

DETOEX_EN = ROOT.parent / "shared" / "data" / "detoex-vocabulary" / "en_vocabulary.csv"

LOAD_SNIPPET = """
import sys, time, json
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from engine.detector import Detector
from engine.vocabulary.loader import load_vocabulary
from pathlib import Path
t1 = time.perf_counter()
detector = Detector(load_vocabulary({vocab!r}), cache_dir=Path({cache!r}))
detector.index("en")
t2 = time.perf_counter()
detector.detect("a first text to analyse", "en")
t3 = time.perf_counter()
hit = detector.index("en").cache_hit
print(json.dumps({{"imports": t1 - t0, "load": t2 - t1, "first_detect": t3 - t2, "cache_hit": hit}}))
"""


def english_vocabulary() -> tuple[Vocabulary, str]:
    if DETOEX_EN.exists():
        from engine.importers import import_vocabulary

        return import_vocabulary(DETOEX_EN, "detoex-csv", "en"), "DETOEX English (imported from ../shared/data)"
    vocabulary = load_vocabulary(shipped_vocabularies()).for_language("en")
    return vocabulary, "shipped English vocabulary (../shared/data not found)"


def load_times(vocabulary: Vocabulary, runs: int) -> dict[str, float]:
    """Vocabulary load in fresh processes: cold (no lemma cache) and with the disk cache."""
    with tempfile.TemporaryDirectory() as tmp:
        vocab_file = Path(tmp) / "vocab.yaml"
        write_vocabulary(vocabulary, vocab_file)
        results: dict[str, list[float]] = {"cold": [], "cached": [], "first_detect_cached": []}
        for _ in range(runs):
            cache = Path(tempfile.mkdtemp(dir=tmp))
            for label in ("cold", "cached"):
                code = LOAD_SNIPPET.format(root=str(ROOT), vocab=str(vocab_file), cache=str(cache))
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
                data = json.loads(out.stdout)
                assert data["cache_hit"] == (label == "cached")
                results[label].append(data["load"])
                if label == "cached":
                    results["first_detect_cached"].append(data["first_detect"])
    return {k: statistics.median(v) for k, v in results.items()}


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, default=5_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--load-runs", type=int, default=3)
    parser.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "results" / "matcher.json")
    args = parser.parse_args()

    rss_start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    vocabulary, source = english_vocabulary()
    print(f"vocabulary: {source}: {len(vocabulary.issues)} issues, {sum(1 for _ in vocabulary.terms())} terms")
    loads = load_times(vocabulary, args.load_runs)

    corpus = generate(vocabulary, "en", args.chars)
    docs = corpus.documents
    print(
        f"corpus: {corpus.chars:,} characters in {len(docs)} documents; {corpus.inserted} terms inserted, "
        f"{corpus.disguised} of them disguised"
    )
    tokenizer = RegexTokenizer()
    with tempfile.TemporaryDirectory() as cache:
        full = Detector(vocabulary, cache_dir=Path(cache))
        plain = Detector(vocabulary, cache_dir=Path(cache), obfuscation=False)
        matcher, plain_matcher = full.matcher("en"), plain.matcher("en")
        results = [matcher.find(d) for d in docs]  # warm-up: fills the per-word caches
        hits = sum(len(r) for r in results)
        # an inserted term counts as found when a hit covers exactly its span (a term inserted
        # next to a word that lengthens it, "welfare" + "queen", is found as the longer term)
        found_spans = {(n, h.start, h.end) for n, r in enumerate(results) for h in r}
        covered = {(n, a, b) for n, spans in enumerate(corpus.spans) for a, b in spans}
        recall = len(covered & found_spans) / len(covered)
        del results
        sum(len(plain_matcher.find(d)) for d in docs)
        rss_after_warmup = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rounds: dict[str, list[float]] = {
            "tokenizer": [],
            "matcher": [],
            "matcher_no_obfuscation": [],
            "detect_auto": [],
        }
        for _ in range(args.rounds):
            rounds["tokenizer"].append(timed(lambda: [tokenizer.tokenize(d) for d in docs]))
            rounds["matcher"].append(timed(lambda: [matcher.find(d) for d in docs]))
            rounds["matcher_no_obfuscation"].append(timed(lambda: [plain_matcher.find(d) for d in docs]))
            rounds["detect_auto"].append(timed(lambda: [full.detect(d) for d in docs]))
    speed = {k: corpus.chars / statistics.median(v) for k, v in rounds.items()}
    rss_end = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    print(f"\nhits found: {hits} ({hits / corpus.chars * 1000:.2f} per 1,000 characters)")
    print(f"inserted terms found at their exact span: {recall:.1%}")
    print(f"\nthroughput (median of {args.rounds} rounds, one process, characters per second)")
    print(f"  raw tokenizer                        {speed['tokenizer']:>12,.0f}")
    print(
        f"  vocabulary pipeline, obfuscation on  {speed['matcher']:>12,.0f}  "
        f"(ratio to tokenizer {speed['matcher'] / speed['tokenizer']:.2f})"
    )
    print(f"  vocabulary pipeline, obfuscation off {speed['matcher_no_obfuscation']:>12,.0f}")
    print(f"  with language detection per document {speed['detect_auto']:>12,.0f}")
    print(f"\nvocabulary load (median of {args.load_runs} fresh processes)")
    print(f"  cold (lemmatize terms, no cache)     {loads['cold'] * 1000:>9.0f} ms")
    print(f"  with the disk cache                  {loads['cached'] * 1000:>9.0f} ms")
    print(f"  first detection after a cached load  {loads['first_detect_cached'] * 1000:>9.0f} ms")
    print("\npeak memory (max RSS)")
    print(f"  before loading                       {rss_start / 1024:>9.0f} MB")
    print(f"  after load, corpus and warm caches   {rss_after_warmup / 1024:>9.0f} MB")
    print(f"  at the end                           {rss_end / 1024:>9.0f} MB")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "vocabulary": source,
                "chars": corpus.chars,
                "hits": hits,
                "speed": speed,
                "load_seconds": loads,
                "max_rss_mb": rss_end / 1024,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
