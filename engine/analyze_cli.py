"""`unerase analyze`: the whole method (vocabulary, disambiguation, targeting, fusion, decision).

unerase analyze "text" [--lang xx] [--backend none|llama-cpp|openai] [--model M] [--base-url URL]
                       [--mode fast|thorough] [--stream] [--json]
unerase analyze --input FILE.jsonl [--output FILE.jsonl] [--concurrency N]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import SQLiteCache
from engine.detector import Detector
from engine.errors import UneraseError
from engine.events import Decision, Event, Explanation, HitFound, Verdict
from engine.llm.backend import LLMBackend
from engine.llm.factory import make_backend
from engine.matching.index import default_cache_dir
from engine.precedents import PrecedentSource
from engine.result import summary
from engine.scope import Scope


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="the text to analyse")
    parser.add_argument("--lang", help="language code; detected when omitted")
    add_backend_arguments(parser)
    parser.add_argument("--stream", action="store_true", help="print events as they arrive")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--input", help='JSONL file ("-" for stdin), one {"id", "text", "lang"} per line')
    parser.add_argument("--output", help="JSONL output file (default stdout)")


def add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """The vocabulary, model, cache and decision options `open_analyzer` reads (shared with `unerase batch`)."""
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


def build_backend(args: argparse.Namespace) -> LLMBackend | None:
    return make_backend(
        args.backend,
        args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        threads=args.threads,
        timeout=args.timeout,
        concurrency=args.concurrency,
        needs_model="--model (a .gguf file or a model name)",
    )


def _human(event: Event) -> str:
    data = event.to_dict()
    if isinstance(event, HitFound):
        return f"hit      [{event.hit.start}:{event.hit.end}] {event.hit.surface!r} -> {event.hit.term.literal}"
    if isinstance(event, Verdict):
        return f"verdict  {event.hit_id}: {event.status} ({event.confidence:.2f}, {event.decided_by}) {event.reason}"
    if isinstance(event, Decision):
        return f"decision {event.label}, severity {event.severity}, confidence {event.confidence:.2f}: " + "; ".join(
            event.reasons
        )
    if isinstance(event, Explanation):
        return f"explanation ({event.faithfulness}): {event.text}"
    return f"{event.type:<8} {json.dumps(data, ensure_ascii=False)}"


async def _run_one(analyzer: Analyzer, args: argparse.Namespace, out: IO[str], scope: Scope | None = None) -> None:
    events: list[Event] = []
    async for event in analyzer.analyze(args.text, args.lang, args.mode, scope=scope):
        events.append(event)
        if args.stream:
            line = (
                json.dumps({"event": event.type, "data": event.to_dict()}, ensure_ascii=False)
                if args.json
                else _human(event)
            )
            print(line, file=out, flush=True)
    if not args.stream:
        if args.json:
            print(json.dumps(summary(events), ensure_ascii=False, indent=2), file=out)
        else:
            for event in events:
                print(_human(event), file=out)


async def _records(source: IO[str]) -> AsyncIterator[tuple[int, dict[str, Any] | None, str | None]]:
    from engine.cli import _records as parse_records

    for item in parse_records(source):
        yield item


async def _run_many(
    analyzer: Analyzer, args: argparse.Namespace, source: IO[str], sink: IO[str], scope: Scope | None = None
) -> tuple[int, int]:
    """Records analysed concurrently (a bounded window), results written in input order."""
    window: list[asyncio.Task[dict[str, Any]]] = []
    counts = [0, 0]

    async def one(number: int, record: dict[str, Any] | None, problem: str | None) -> dict[str, Any]:
        if record is None:
            return {"line": number, "error": {"code": "invalid-record", "message": problem}}
        lang = record.get("lang") if isinstance(record.get("lang"), str) and record.get("lang") else None
        try:
            events = [e async for e in analyzer.analyze(record["text"], lang, args.mode, scope=scope)]
        except UneraseError as exc:
            return {"id": record.get("id"), "line": number, "error": {"code": exc.code, "message": exc.message}}
        return summary(events, record.get("id"))

    def flush(task: asyncio.Task[dict[str, Any]]) -> None:
        result = task.result()
        counts[1 if "error" in result else 0] += 1
        sink.write(json.dumps(result, ensure_ascii=False) + "\n")

    async for number, record, problem in _records(source):
        window.append(asyncio.ensure_future(one(number, record, problem)))
        if len(window) >= args.concurrency * 2:
            first = window.pop(0)
            await first
            flush(first)
    for task in window:
        await task
        flush(task)
    return counts[0], counts[1]


def cmd_analyze(args: argparse.Namespace, scope: Scope | None = None, precedents: PrecedentSource | None = None) -> int:
    """`scope` and `precedents`: a site's term rules and its verdict sources (`unerase analyze --site KEY`)."""
    from engine.cli import _open_in, _open_out, _vocabulary

    detector = Detector(_vocabulary(args.vocab))
    return asyncio.run(_analyze(args, detector, _open_in, _open_out, scope, precedents))


@contextlib.asynccontextmanager
async def open_analyzer(
    args: argparse.Namespace, detector: Detector, precedents: PrecedentSource | None = None
) -> AsyncIterator[Analyzer]:
    """An Analyzer set up from `add_backend_arguments` options; its backend and cache are closed on exit."""
    backend = build_backend(args)
    cache = (
        None if args.no_cache else SQLiteCache(Path(args.cache) if args.cache else default_cache_dir() / "llm.sqlite")
    )
    config = AnalyzerConfig(
        mode=args.mode, concurrency=args.concurrency, timeout=args.timeout, threshold=args.threshold
    )
    try:
        yield Analyzer(detector, BackendRouter(backend), cache=cache, config=config, precedents=precedents)
    finally:
        if backend is not None:
            await backend.aclose()
        if cache is not None:
            cache.close()


async def _analyze(
    args: argparse.Namespace,
    detector: Detector,
    open_in: Any,
    open_out: Any,
    scope: Scope | None = None,
    precedents: PrecedentSource | None = None,
) -> int:
    async with open_analyzer(args, detector, precedents) as analyzer:
        if args.input:
            with open_in(args.input) as source, open_out(args.output) as sink:
                done, failed = await _run_many(analyzer, args, source, sink, scope)
            print(f"{done} records analysed, {failed} with errors", file=sys.stderr)
            return 0 if failed == 0 else 3
        if args.text is None:
            raise UneraseError('give a text ("unerase analyze \\"some text\\"") or --input FILE.jsonl')
        await _run_one(analyzer, args, sys.stdout, scope)
        return 0
