"""`unerase detect`: the vocabulary terms of a text, without a model.

unerase detect "text" [--lang xx] [--vocab PATH ...] [--json] [--no-obfuscation]
unerase detect --input FILE.jsonl [--output FILE.jsonl]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from typing import IO

from engine.cli.common import open_in, open_out, records, vocabulary
from engine.detector import Detection, Detector
from engine.errors import UneraseError
from engine.scope import Scope


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("text", nargs="?", help="the text to analyse")
    parser.add_argument("--lang", help="language code; detected when omitted")
    parser.add_argument("--vocab", action="append", help="vocabulary file or folder (repeatable); default: shipped")
    parser.add_argument("--json", action="store_true", help="print JSON")
    parser.add_argument("--input", help='JSONL file ("-" for stdin), one {"id", "text", "lang"} per line')
    parser.add_argument("--output", help="JSONL output file (default stdout)")
    parser.add_argument("--no-obfuscation", action="store_true", help="skip leetspeak/mask/separator matching")


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


def detect_jsonl(detector: Detector, source: IO[str], sink: IO[str], scope: Scope | None = None) -> tuple[int, int]:
    """One JSON result per input line, streaming; bad lines give an error object, not a stop."""
    done = failed = 0
    for number, record, problem in records(source):
        if record is None:
            sink.write(json.dumps({"line": number, "error": {"code": "invalid-record", "message": problem}}) + "\n")
            failed += 1
            continue
        lang = record.get("lang")
        try:
            result = _scoped(detector.detect(record["text"], lang if isinstance(lang, str) and lang else None), scope)
        except UneraseError as exc:
            error = {"code": exc.code, "message": exc.message}
            sink.write(json.dumps({"id": record.get("id"), "line": number, "error": error}, ensure_ascii=False) + "\n")
            failed += 1
            continue
        payload = {
            "id": record.get("id"),
            "lang": result.language,
            "hits": [h.to_dict(full=False) for h in result.hits],
        }
        sink.write(json.dumps(payload, ensure_ascii=False) + "\n")
        done += 1
    return done, failed


def cmd_detect(args: argparse.Namespace, scope: Scope | None = None) -> int:
    """`scope`: a site's term rules (given by `unerase detect --site KEY`)."""
    detector = Detector(vocabulary(args.vocab), obfuscation=not args.no_obfuscation)
    if args.input:
        started = time.perf_counter()
        with open_in(args.input) as source, open_out(args.output) as sink:
            done, failed = detect_jsonl(detector, source, sink, scope)
        print(
            f"{done} records analysed, {failed} with errors, in {time.perf_counter() - started:.1f} s", file=sys.stderr
        )
        return 0 if failed == 0 else 3
    if args.text is None:
        raise UneraseError('give a text ("unerase detect \\"some text\\"") or --input FILE.jsonl')
    result = _scoped(detector.detect(args.text, args.lang), scope)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        _print_hits(result, sys.stdout)
    return 0
