"""`unerase analyze`: the whole method (vocabulary, disambiguation, targeting, fusion, decision).

unerase analyze "text" [--lang xx] [--backend none|llama-cpp|openai] [--model M] [--base-url URL]
                       [--mode fast|thorough] [--stream] [--json]
unerase analyze --input FILE.jsonl [--output FILE.jsonl] [--concurrency N] [--jobs N] [--shard K/N]

With --json (and for every record of --input) the result is the record of engine/result.py, the same as a
line of `unerase batch` and the same fold as the API's result document, with the version of the vocabularies
it was analysed with (`vocabulary_version`), so outputs made on different machines can be checked to match.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing.util
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import IO

from engine.analysis import Analyzer
from engine.cli.common import (
    JsonRecord,
    add_backend_arguments,
    add_corpus_arguments,
    check_concurrency,
    corpus_options,
    open_analyzer,
    open_in,
    open_out,
    records,
    vocabulary,
)
from engine.cli.pool import Chunk, Done, chunks, run_in_pool
from engine.cli.runner import Result, run_in_order
from engine.cli.shard import Shard
from engine.detector import Detector
from engine.errors import UneraseError
from engine.events import Decision, Event, Explanation, HitFound, Verdict
from engine.pipeline import SiteSources
from engine.result import summary
from engine.scope import Scope
from engine.vocabulary.model import Vocabulary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="the text to analyse")
    parser.add_argument("--lang", help="language code; detected when omitted")
    add_backend_arguments(parser)
    parser.add_argument("--stream", action="store_true", help="print events as they arrive")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--input", help='JSONL file ("-" for stdin), one {"id", "text", "lang"} per line')
    parser.add_argument("--output", help="JSONL output file (default stdout)")
    add_corpus_arguments(parser)


def cmd_analyze(args: argparse.Namespace, scope: Scope | None = None, site: SiteSources | None = None) -> int:
    """`scope` and `site`: a site's term rules and its own verdict sources (`unerase analyze --site KEY`)."""
    jobs, shard = corpus_options(args)
    detector = Detector(vocabulary(args.vocab))
    if args.input:
        check_concurrency(args)
    elif args.text is None:
        raise UneraseError('give a text ("unerase analyze \\"some text\\"") or --input FILE.jsonl')
    if jobs > 1:
        if site is not None:
            # a site's precedents are read from the web app's database through a connection no worker can share
            raise UneraseError("--jobs with --site is not supported; run the site's analyses with --jobs 1")
        return _analyze_in_pool(args, detector.vocabulary, scope, shard, jobs)
    return asyncio.run(_analyze(args, detector, scope, site, shard))


async def _analyze(
    args: argparse.Namespace,
    detector: Detector,
    scope: Scope | None,
    site: SiteSources | None,
    shard: Shard | None,
) -> int:
    async with open_analyzer(args, detector, site) as analyzer:
        if not args.input:
            await _run_one(analyzer, args, sys.stdout, scope)
            return 0
        with open_in(args.input) as source, open_out(args.output) as sink:
            done, failed = await _analyze_lines(analyzer, args, scope, shard, source, sink.write)
        print(f"{done} records analysed, {failed} with errors", file=sys.stderr)
        return 0 if failed == 0 else 3


async def _analyze_lines(
    analyzer: Analyzer,
    args: argparse.Namespace,
    scope: Scope | None,
    shard: Shard | None,
    lines: Iterable[str],
    write: Callable[[str], object],
    start: int = 1,
) -> tuple[int, int]:
    """The records of `lines` (those of the shard, with `shard`) analysed in order, each written as a line."""
    version = analyzer.detector.vocabulary.version
    return await run_in_order(
        (item for item in records(lines, start) if shard is None or shard.holds(item[0], item[1])),
        lambda item: _analyse(analyzer, item, args.mode, scope),
        lambda result: write(json.dumps({**result, "vocabulary_version": version}, ensure_ascii=False) + "\n"),
        concurrency=args.concurrency,
    )


def _analyze_in_pool(
    args: argparse.Namespace, loaded: Vocabulary, scope: Scope | None, shard: Shard | None, jobs: int
) -> int:
    with open_in(args.input) as source, open_out(args.output) as sink:
        done, failed = run_in_pool(
            chunks(source),
            _analyze_chunk,
            sink.write,
            jobs=jobs,
            initializer=_start_worker,
            initargs=(args, loaded, scope, shard),
        )
    print(f"{done} records analysed, {failed} with errors", file=sys.stderr)
    return 0 if failed == 0 else 3


@dataclass
class _Worker:
    """What one worker process analyses with: its own event loop and Analyzer (or why it could not open one)."""

    loop: asyncio.AbstractEventLoop
    analyzer: Analyzer | None
    failure: UneraseError | None
    args: argparse.Namespace
    scope: Scope | None
    shard: Shard | None


# Set by `_start_worker` in each worker process (a pool's initializer can only leave its work in globals).
_worker: _Worker | None = None


def _start_worker(args: argparse.Namespace, loaded: Vocabulary, scope: Scope | None, shard: Shard | None) -> None:
    global _worker
    loop = asyncio.new_event_loop()
    opened = open_analyzer(args, Detector(loaded))
    try:
        analyzer: Analyzer | None = loop.run_until_complete(opened.__aenter__())
    except UneraseError as exc:
        # kept and raised with the first chunk, so the command reports it as one process would
        _worker = _Worker(loop, None, exc, args, scope, shard)
        return
    _worker = _Worker(loop, analyzer, None, args, scope, shard)
    # a worker ends through multiprocessing's exit handlers, not atexit: close the backend and cache there
    multiprocessing.util.Finalize(
        None, lambda: loop.run_until_complete(opened.__aexit__(None, None, None)), exitpriority=10
    )


def _analyze_chunk(chunk: Chunk) -> Done:
    assert _worker is not None, "_start_worker runs first in every worker"
    if _worker.analyzer is None:
        assert _worker.failure is not None
        raise _worker.failure
    out: list[str] = []
    done, failed = _worker.loop.run_until_complete(
        _analyze_lines(_worker.analyzer, _worker.args, _worker.scope, _worker.shard, chunk[1], out.append, chunk[0])
    )
    return "".join(out), done, failed


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
            result = {**summary(events), "vocabulary_version": analyzer.detector.vocabulary.version}
            print(json.dumps(result, ensure_ascii=False, indent=2), file=out)
        else:
            for event in events:
                print(_human(event), file=out)


async def _analyse(analyzer: Analyzer, item: JsonRecord, mode: str | None, scope: Scope | None) -> Result:
    number, record, problem = item
    if record is None:
        return {"line": number, "error": {"code": "invalid-record", "message": problem}}
    lang = record.get("lang") if isinstance(record.get("lang"), str) and record.get("lang") else None
    try:
        events = [e async for e in analyzer.analyze(record["text"], lang, mode, scope=scope)]
    except UneraseError as exc:
        return {"id": record.get("id"), "line": number, "error": {"code": exc.code, "message": exc.message}}
    return summary(events, record.get("id"))


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
