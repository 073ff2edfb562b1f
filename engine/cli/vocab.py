"""`unerase vocab`: check, inspect, import and export vocabularies.

unerase vocab check|stats [PATH ...]
unerase vocab import FILE --format FMT [--lang xx] --out PATH
unerase vocab export PATH [--out FILE.ttl]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from engine.cli.common import vocabulary
from engine.detector import Detector
from engine.vocabulary.stats import format_stats, vocabulary_stats
from engine.vocabulary.writer import write_vocabulary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    vsub = parser.add_subparsers(dest="vocab_command", required=True)
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


def cmd_vocab_check(args: argparse.Namespace) -> int:
    loaded = vocabulary(args.paths)
    detector = Detector(loaded)
    unmatched = []
    for language in loaded.languages:
        index = detector.index(language)
        known = {t.id for node in _walk(index.root) for t in node.terms}
        unmatched += [t for t in loaded.terms(language) if t.id not in known]
    for term in unmatched:
        print(
            f"warning: term {term.literal!r} ({term.issue_id}) has no word characters and can never match",
            file=sys.stderr,
        )
    terms = sum(1 for _ in loaded.terms())
    print(f"ok: {len(loaded.issues)} issues, {terms} terms in {', '.join(loaded.languages)}; version {loaded.version}")
    return 0


def _walk(node: Any) -> Iterator[Any]:
    yield node
    for child in node.children.values():
        yield from _walk(child)


def cmd_vocab_stats(args: argparse.Namespace) -> int:
    print(format_stats(vocabulary_stats(vocabulary(args.paths))))
    return 0


def cmd_vocab_import(args: argparse.Namespace) -> int:
    # imported here, not at the top: the importers and the SKOS export load rdflib, about a third of a second that
    # every other command would pay
    from engine.importers import import_vocabulary

    imported = import_vocabulary(Path(args.file), args.format, args.lang)
    written = write_vocabulary(imported, args.out)
    terms = sum(1 for _ in imported.terms())
    print(f"imported {len(imported.issues)} issues, {terms} terms; wrote {', '.join(map(str, written))}")
    return 0


def cmd_vocab_export(args: argparse.Namespace) -> int:
    from engine.skos import export_skos  # rdflib, as above

    turtle = export_skos(vocabulary([args.path]))
    if args.out:
        Path(args.out).write_text(turtle, encoding="utf-8")
    else:
        sys.stdout.write(turtle)
    return 0
