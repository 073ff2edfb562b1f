"""The `unerase` command line: vocabulary tools and detection.

unerase detect "text" [--lang xx] [--vocab PATH ...] [--json]
unerase detect --input FILE.jsonl [--output FILE.jsonl]
unerase eval FILE.csv|FILE.jsonl [--label-column C --positive V ...]   (engine/eval_cli.py)
unerase audit [--lang xx ...] [--templates FILE]                          (engine/audit_cli.py)
unerase vocab check|stats [PATH ...]
unerase vocab import FILE --format FMT [--lang xx] --out PATH
unerase vocab export PATH [--out FILE.ttl]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from engine.detector import Detection, Detector
from engine.errors import UneraseError
from engine.jsonlines import UnreadableLine, parse_line
from engine.paths import shipped_vocabularies
from engine.scope import Scope
from engine.vocabulary.loader import load_vocabularies
from engine.vocabulary.model import Vocabulary
from engine.vocabulary.stats import format_stats, vocabulary_stats


def _vocabulary(paths: Sequence[str] | None) -> Vocabulary:
    return load_vocabularies(paths or [shipped_vocabularies()])


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


def _records(stream: IO[str]) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    for number, line in enumerate(stream, start=1):
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


def _scoped(result: Detection, scope: Scope | None) -> Detection:
    """The detection as a site sees it (its excluded terms gone, its marked terms ambiguous)."""
    return result if scope is None else dataclasses.replace(result, hits=scope.apply(result.hits))


def detect_jsonl(detector: Detector, source: IO[str], sink: IO[str], scope: Scope | None = None) -> tuple[int, int]:
    """One JSON result per input line, streaming; bad lines give an error object, not a stop."""
    done = failed = 0
    for number, record, problem in _records(source):
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
    detector = Detector(_vocabulary(args.vocab), obfuscation=not args.no_obfuscation)
    if args.input:
        started = time.perf_counter()
        with _open_in(args.input) as source, _open_out(args.output) as sink:
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


def _open_in(name: str) -> IO[str]:
    return sys.stdin if name == "-" else open(name, encoding="utf-8", errors="surrogateescape")


def _open_out(name: str | None) -> contextlib.AbstractContextManager[IO[str]]:
    if name in (None, "-"):
        return contextlib.nullcontext(sys.stdout)
    return open(name, "w", encoding="utf-8")


def cmd_vocab_check(args: argparse.Namespace) -> int:
    vocabulary = _vocabulary(args.paths)
    detector = Detector(vocabulary)
    unmatched = []
    for language in vocabulary.languages:
        index = detector.index(language)
        known = {t.id for node in _walk(index.root) for t in node.terms}
        unmatched += [t for t in vocabulary.terms(language) if t.id not in known]
    for term in unmatched:
        print(
            f"warning: term {term.literal!r} ({term.issue_id}) has no word characters and can never match",
            file=sys.stderr,
        )
    terms = sum(1 for _ in vocabulary.terms())
    print(
        f"ok: {len(vocabulary.issues)} issues, {terms} terms in {', '.join(vocabulary.languages)}; "
        f"version {vocabulary.version}"
    )
    return 0


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in node.children.values():
        yield from _walk(child)


def cmd_vocab_stats(args: argparse.Namespace) -> int:
    print(format_stats(vocabulary_stats(_vocabulary(args.paths))))
    return 0


def cmd_vocab_import(args: argparse.Namespace) -> int:
    from engine.importers import import_vocabulary
    from engine.vocabulary.writer import write_vocabulary

    vocabulary = import_vocabulary(Path(args.file), args.format, args.lang)
    written = write_vocabulary(vocabulary, args.out)
    terms = sum(1 for _ in vocabulary.terms())
    print(f"imported {len(vocabulary.issues)} issues, {terms} terms; wrote {', '.join(map(str, written))}")
    return 0


def cmd_vocab_export(args: argparse.Namespace) -> int:
    from engine.skos import export_skos

    turtle = export_skos(_vocabulary([args.path]))
    if args.out:
        Path(args.out).write_text(turtle, encoding="utf-8")
    else:
        sys.stdout.write(turtle)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unerase", description="Detect and explain contentious terms.")
    sub = parser.add_subparsers(dest="command", required=True)

    detect = sub.add_parser("detect", help="find vocabulary terms in a text (no LLM)")
    detect.add_argument("text", nargs="?", help="the text to analyse")
    detect.add_argument("--lang", help="language code; detected when omitted")
    detect.add_argument("--vocab", action="append", help="vocabulary file or folder (repeatable); default: shipped")
    detect.add_argument("--json", action="store_true", help="print JSON")
    detect.add_argument("--input", help='JSONL file ("-" for stdin), one {"id", "text", "lang"} per line')
    detect.add_argument("--output", help="JSONL output file (default stdout)")
    detect.add_argument("--no-obfuscation", action="store_true", help="skip leetspeak/mask/separator matching")
    detect.set_defaults(func=cmd_detect)

    from engine.analyze_cli import add_arguments, cmd_analyze

    analyze = sub.add_parser("analyze", help="detect, disambiguate, check for attacks, explain and decide")
    add_arguments(analyze)
    analyze.set_defaults(func=cmd_analyze)

    from engine import batch_cli

    batch = sub.add_parser("batch", help="analyse every text of a CSV, JSONL or ZIP-of-.txt file")
    batch_cli.add_arguments(batch)
    batch.set_defaults(func=batch_cli.cmd_batch)

    from engine import eval_cli

    evaluation = sub.add_parser("eval", help="measure a configuration on a labelled CSV or JSONL file")
    eval_cli.add_arguments(evaluation)
    evaluation.set_defaults(func=eval_cli.cmd_eval)

    from engine import audit_cli

    audit = sub.add_parser("audit", help="counterfactual fairness test: the same sentence about different groups")
    audit_cli.add_arguments(audit)
    audit.set_defaults(func=audit_cli.cmd_audit)

    vocab = sub.add_parser("vocab", help="check, inspect, import and export vocabularies")
    vsub = vocab.add_subparsers(dest="vocab_command", required=True)
    check = vsub.add_parser("check", help="validate vocabulary files (default: shipped)")
    check.add_argument("paths", nargs="*")
    check.set_defaults(func=cmd_vocab_check)
    stats = vsub.add_parser("stats", help="counts per language, category and ambiguity")
    stats.add_argument("paths", nargs="*")
    stats.set_defaults(func=cmd_vocab_stats)
    imp = vsub.add_parser("import", help="convert a published vocabulary to the unerase format")
    imp.add_argument("file")
    imp.add_argument("--format", required=True, choices=["debias-csv", "debias-skos", "detoex-csv", "detoex-pickle"])
    imp.add_argument("--lang", help="language code when the file does not say")
    imp.add_argument("--out", required=True, help="output folder, or a .yaml file for one language")
    imp.set_defaults(func=cmd_vocab_import)
    export = vsub.add_parser("export", help="export a vocabulary as SKOS (Turtle)")
    export.add_argument("path")
    export.add_argument("--out", help="output .ttl file (default stdout)")
    export.set_defaults(func=cmd_vocab_export)
    return parser


def main(argv: Sequence[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """`parser` lets the web package add its commands (site, ...) to the same `unerase` program."""
    args = (parser or build_parser()).parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except UneraseError as exc:
        print(f"unerase: error: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
