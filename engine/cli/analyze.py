"""`unerase analyze`: the whole method (vocabulary, disambiguation, targeting, fusion, decision).

unerase analyze "text" [--lang xx] [--backend none|llama-cpp|openai] [--model M] [--base-url URL]
                       [--mode fast|thorough] [--stream] [--json]
unerase analyze --input FILE.jsonl [--output FILE.jsonl] [--concurrency N]

With --json (and for every record of --input) the result is the record of engine/result.py, the same as a
line of `unerase batch` and the same fold as the API's result document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import IO

from engine.analysis import Analyzer
from engine.cli.common import (
    JsonRecord,
    add_backend_arguments,
    check_concurrency,
    open_analyzer,
    open_in,
    open_out,
    records,
    vocabulary,
)
from engine.cli.runner import Result, run_in_order
from engine.detector import Detector
from engine.errors import UneraseError
from engine.events import Decision, Event, Explanation, HitFound, Verdict
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


def cmd_analyze(args: argparse.Namespace, scope: Scope | None = None, precedents: PrecedentSource | None = None) -> int:
    """`scope` and `precedents`: a site's term rules and its verdict sources (`unerase analyze --site KEY`)."""
    detector = Detector(vocabulary(args.vocab))
    if args.input:
        check_concurrency(args)
    elif args.text is None:
        raise UneraseError('give a text ("unerase analyze \\"some text\\"") or --input FILE.jsonl')
    return asyncio.run(_analyze(args, detector, scope, precedents))


async def _analyze(
    args: argparse.Namespace, detector: Detector, scope: Scope | None, precedents: PrecedentSource | None
) -> int:
    async with open_analyzer(args, detector, precedents) as analyzer:
        if not args.input:
            await _run_one(analyzer, args, sys.stdout, scope)
            return 0
        with open_in(args.input) as source, open_out(args.output) as sink:
            done, failed = await run_in_order(
                records(source),
                lambda item: _analyse(analyzer, item, args.mode, scope),
                lambda result: sink.write(json.dumps(result, ensure_ascii=False) + "\n"),
                concurrency=args.concurrency,
            )
        print(f"{done} records analysed, {failed} with errors", file=sys.stderr)
        return 0 if failed == 0 else 3


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
