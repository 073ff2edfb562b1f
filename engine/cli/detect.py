"""`unerase detect`: the vocabulary terms of a text, without a model.

unerase detect "text" [--lang xx] [--vocab PATH ...] [--json] [--no-obfuscation]
unerase detect --input FILE.jsonl [--output FILE.jsonl] [--jobs N] [--shard K/N]

Every line of --input's output carries the vocabulary's version (`vocabulary_version`), so outputs made on
different machines (`--shard`) can be checked to come from the same vocabularies (docs/corpus.md).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
import time
from collections.abc import Iterable
from typing import IO, Any

from engine.cli.common import add_corpus_arguments, corpus_options, open_in, open_out, records, vocabulary
from engine.cli.pool import Chunk, Done, chunks, run_in_pool
from engine.cli.shard import Shard
from engine.detector import Detection, Detector
from engine.errors import UneraseError
from engine.scope import Scope
from engine.vocabulary.model import Vocabulary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="the text to analyse")
    parser.add_argument("--lang", help="language code; detected when omitted")
    parser.add_argument("--vocab", action="append", help="vocabulary file or folder (repeatable); default: shipped")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--input", help='JSONL file ("-" for stdin), one {"id", "text", "lang"} per line')
    parser.add_argument("--output", help="JSONL output file (default stdout)")
    parser.add_argument("--no-obfuscation", action="store_true", help="skip leetspeak/mask/separator matching")
    add_corpus_arguments(parser)


def _print_hits(result: Detection, out: IO[str]) -> None:
    how = "detected" if result.language_detected else "given"
    print(f"language: {result.language} ({how}, confidence {result.language_confidence:.2f})", file=out)
    print(f"vocabulary version: {result.vocabulary_version}", file=out)
    for warning in result.warnings:
        print(f"warning: {warning}", file=out)
    if not result.hits:
        print("no vocabulary term found", file=out)
    for hit in result.hits:
        flags = [
            f
            for f, on in (("ambiguous", hit.ambiguous), ("obfuscated", hit.obfuscated), ("variant", hit.variant))
            if on
        ]
        print(f"\n[{hit.start}:{hit.end}] {hit.surface!r} -> {hit.term.literal} ({hit.issue.id})", file=out)
        if hit.candidates:
            print(f"  could also stand for: {', '.join(hit.candidates[1:])}", file=out)
        print(f"  categories: {', '.join(hit.issue.categories)}" + (f"; {', '.join(flags)}" if flags else ""), file=out)
        print(f"  {hit.issue.description}", file=out)
        if hit.issue.suggestion_note:
            print(f"  suggestion: {hit.issue.suggestion_note}", file=out)
        if hit.issue.suggested_terms:
            print(f"  instead: {', '.join(hit.issue.suggested_terms)}", file=out)
        print(f"  sources: {'; '.join(hit.issue.sources)}", file=out)


def _scoped(result: Detection, scope: Scope | None) -> Detection:
    """The detection as a site sees it (its excluded terms gone, its marked terms ambiguous)."""
    return result if scope is None else dataclasses.replace(result, hits=scope.apply(result.hits))


def detect_jsonl(
    detector: Detector,
    source: Iterable[str],
    sink: IO[str],
    scope: Scope | None = None,
    shard: Shard | None = None,
    *,
    start: int = 1,
) -> tuple[int, int]:
    """One JSON result per input line (per line of the shard, with `shard`), streaming; bad lines give an error
    object, not a stop. `start`: the number of the first line (a chunk of a bigger input)."""
    done = failed = 0
    for number, record, problem in records(source, start):
        if shard is None or shard.holds(number, record):
            line, ok = _detect_line(detector, scope, number, record, problem)
            sink.write(line)
            done, failed = (done + 1, failed) if ok else (done, failed + 1)
    return done, failed


def _detect_line(
    detector: Detector, scope: Scope | None, number: int, record: dict[str, Any] | None, problem: str | None
) -> tuple[str, bool]:
    """The output line of one input line, and whether it was analysed (not an error)."""
    version = detector.vocabulary.version
    if record is None:
        error = {"code": "invalid-record", "message": problem}
        return json.dumps({"line": number, "error": error, "vocabulary_version": version}) + "\n", False
    lang = record.get("lang")
    try:
        result = _scoped(detector.detect(record["text"], lang if isinstance(lang, str) and lang else None), scope)
    except UneraseError as exc:
        error = {"code": exc.code, "message": exc.message}
        payload = {"id": record.get("id"), "line": number, "error": error, "vocabulary_version": version}
        return json.dumps(payload, ensure_ascii=False) + "\n", False
    payload = {
        "id": record.get("id"),
        "lang": result.language,
        "hits": [h.to_dict(full=False) for h in result.hits],
        "vocabulary_version": version,
    }
    return json.dumps(payload, ensure_ascii=False) + "\n", True


# The worker process's detector, built once by `_start_worker` (a pool's initializer can only leave its work in
# the process's globals).
_worker: tuple[Detector, Scope | None, Shard | None] | None = None


def _start_worker(vocabulary: Vocabulary, obfuscation: bool, scope: Scope | None, shard: Shard | None) -> None:
    global _worker
    _worker = (Detector(vocabulary, obfuscation=obfuscation), scope, shard)


def _detect_chunk(chunk: Chunk) -> Done:
    assert _worker is not None, "_start_worker runs first in every worker"
    detector, scope, shard = _worker
    out = io.StringIO()
    done, failed = detect_jsonl(detector, chunk[1], out, scope, shard, start=chunk[0])
    return out.getvalue(), done, failed


def cmd_detect(args: argparse.Namespace, scope: Scope | None = None) -> int:
    """`scope`: a site's term rules (given by `unerase detect --site KEY`)."""
    jobs, shard = corpus_options(args)
    loaded = vocabulary(args.vocab)
    if args.input:
        started = time.perf_counter()
        with open_in(args.input) as source, open_out(args.output) as sink:
            if jobs == 1:
                detector = Detector(loaded, obfuscation=not args.no_obfuscation)
                done, failed = detect_jsonl(detector, source, sink, scope, shard)
            else:
                done, failed = run_in_pool(
                    chunks(source),
                    _detect_chunk,
                    sink.write,
                    jobs=jobs,
                    initializer=_start_worker,
                    initargs=(loaded, not args.no_obfuscation, scope, shard),
                )
        print(
            f"{done} records analysed, {failed} with errors, in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )
        return 0 if failed == 0 else 3
    if args.text is None:
        raise UneraseError('give a text ("unerase detect \\"some text\\"") or --input FILE.jsonl')
    result = _scoped(Detector(loaded, obfuscation=not args.no_obfuscation).detect(args.text, args.lang), scope)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        _print_hits(result, sys.stdout)
    return 0
