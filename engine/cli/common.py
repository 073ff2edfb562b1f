"""What the engine's commands share: vocabularies, input and output files, JSONL records, the model options and
the Analyzer they open, and the progress bar."""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import IO, Any

from engine.analysis import Analyzer
from engine.cli.pool import parse_jobs
from engine.cli.shard import Shard
from engine.detector import Detector
from engine.errors import UneraseError
from engine.jsonlines import UnreadableLine, parse_line
from engine.paths import shipped_vocabularies
from engine.pipeline import PipelineConfig, SiteSources, open_pipeline
from engine.sense_examples import MIN_CONFIDENCE
from engine.vocabulary.loader import load_vocabularies
from engine.vocabulary.model import Vocabulary

# One line of a JSONL input: its number, and the record, or what is wrong with the line.
JsonRecord = tuple[int, dict[str, Any] | None, str | None]


def vocabulary(paths: Sequence[str] | None) -> Vocabulary:
    return load_vocabularies(paths or [shipped_vocabularies()])


def open_in(name: str) -> IO[str]:
    return sys.stdin if name == "-" else open(name, encoding="utf-8", errors="surrogateescape")


def open_out(name: str | None) -> contextlib.AbstractContextManager[IO[str]]:
    if name in (None, "-"):
        return contextlib.nullcontext(sys.stdout)
    return open(name, "w", encoding="utf-8")


def records(lines: Iterable[str], start: int = 1) -> Iterator[JsonRecord]:
    """The records of a JSONL stream (or of a chunk of it whose first line is line `start`), read as they are
    needed; a bad line is reported, not raised."""
    for number, line in enumerate(lines, start=start):
        if not line.strip():
            continue
        try:
            record = parse_line(line)
        except UnreadableLine as exc:
            yield number, None, f"{exc.problem}; expected one object per line"
            continue
        if not isinstance(record, dict) or not isinstance(record.get("text"), str):
            yield number, None, 'expected an object like {"id": ..., "text": "...", "lang": "en"} with a string "text"'
            continue
        yield number, record, None


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The vocabulary, model, cache and decision options `open_analyzer` reads (`analyze`, `batch`, `eval`, `audit`;
    `engine.pipeline.PipelineConfig.from_args` reads them too)."""
    parser.add_argument("--vocab", action="append", help="vocabulary file or folder (repeatable); default: shipped")
    parser.add_argument("--backend", choices=["none", "llama-cpp", "openai"], default="none")
    parser.add_argument("--model", help="GGUF file (llama-cpp) or model name (openai)")
    parser.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    parser.add_argument("--api-key", help="API key for the openai backend (or OPENAI_API_KEY)")
    parser.add_argument("--threads", type=int, default=2, help="llama-cpp threads")
    parser.add_argument("--mode", choices=["fast", "thorough"], default="fast")
    parser.add_argument("--threshold", type=float, default=0.5, help="confidence below which a decision is deferred")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per model call")
    parser.add_argument("--concurrency", type=int, default=4, help="model calls (and records) in flight")
    parser.add_argument("--cache", help="SQLite file for cached model answers (default in the cache folder)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write cached model answers")
    parser.add_argument(
        "--no-examples", action="store_true", help="do not decide ambiguous hits from labelled examples (embeddings)"
    )
    parser.add_argument(
        "--examples-min-confidence",
        type=float,
        help=f"confidence below which the examples leave an ambiguous hit undecided (default {MIN_CONFIDENCE})",
    )
    parser.add_argument(
        "--no-learned-uses", action="store_true", help="read quoted, reported and reclaimed uses by the rules alone"
    )


def add_corpus_arguments(parser: argparse.ArgumentParser) -> None:
    """`--jobs` and `--shard` of a command with --input (engine/cli/pool.py, engine/cli/shard.py)."""
    parser.add_argument(
        "--jobs", help="worker processes for --input (default 1; auto: one per CPU); the output is the same"
    )
    parser.add_argument(
        "--shard", help="K/N: analyse only the K-th of N shares of --input (split a corpus over N machines)"
    )


def corpus_options(args: argparse.Namespace) -> tuple[int, Shard | None]:
    """The checked `--jobs` and `--shard` (both only mean something with --input)."""
    for option, value in (("--jobs", args.jobs), ("--shard", args.shard)):
        if value is not None and not args.input:
            raise UneraseError(f"{option} applies to --input FILE.jsonl only, not to one text")
    return parse_jobs(args.jobs), None if args.shard is None else Shard.parse(args.shard)


def check_concurrency(args: argparse.Namespace) -> None:
    if args.concurrency < 1:
        raise UneraseError(f"--concurrency {args.concurrency} is not accepted; give 1 or more")


def open_analyzer(
    args: argparse.Namespace, detector: Detector, site: SiteSources | None = None
) -> contextlib.AbstractAsyncContextManager[Analyzer]:
    """An Analyzer set up from `add_backend_arguments` options (with a site's own verdict sources when given);
    its backend and caches are closed on exit."""
    return open_pipeline(
        PipelineConfig.from_args(args),
        detector,
        site=site,
        needs_model="--model (a .gguf file or a model name)",
    )


class Progress:
    """`[#####-----] 123/1000 rows  45.6 rows/s` redrawn in place on stderr, at most ten times a second."""

    WIDTH = 30

    def __init__(self, total: int, *, enabled: bool, stream: IO[str]) -> None:
        self.total = total
        self.enabled = enabled
        self.stream = stream
        self.done = 0
        self.started = time.perf_counter()
        self.drawn = 0.0

    @classmethod
    def on_stderr(cls, total: int, asked: bool) -> Progress:
        """Drawn when asked for (`--progress`) or when stderr is a terminal."""
        return cls(total, enabled=asked or sys.stderr.isatty(), stream=sys.stderr)

    def step(self) -> None:
        self.done += 1
        now = time.perf_counter()
        if self.enabled and (now - self.drawn >= 0.1 or self.done == self.total):
            self.drawn = now
            self._draw(now)

    def finish(self) -> None:
        if self.enabled:
            self._draw(time.perf_counter())
            self.stream.write("\n")
            self.stream.flush()

    def _draw(self, now: float) -> None:
        filled = self.WIDTH * self.done // self.total if self.total else self.WIDTH
        rate = self.done / max(now - self.started, 1e-6)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.stream.write(f"\r[{bar}] {self.done}/{self.total} rows  {rate:.1f} rows/s")
        self.stream.flush()
