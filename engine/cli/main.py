"""The engine's `unerase` command line: the argument parser and the dispatch to each command's module.

unerase detect "text" [--lang xx] [--vocab PATH ...] [--json]      (engine/cli/detect.py)
unerase detect --input FILE.jsonl [--output FILE.jsonl]
unerase analyze "text" | --input FILE.jsonl [...]                   (engine/cli/analyze.py)
unerase batch FILE [...]                                            (engine/cli/batch.py)
unerase eval FILE.csv|FILE.jsonl [--label-column C --positive V ...] (engine/cli/evaluate.py)
unerase audit [--lang xx ...] [--templates FILE]                    (engine/cli/audit.py)
unerase vocab check|stats|import|export ...                         (engine/cli/vocab.py)
unerase shards check OUTPUT.jsonl ... [--input CORPUS.jsonl]        (engine/cli/shards.py)

The web package adds its commands (site, user, precedents, ...) to the same parser (web/cli.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import engine.cli.analyze as analyze
import engine.cli.audit as audit
import engine.cli.batch as batch
import engine.cli.detect as detect
import engine.cli.evaluate as evaluate
import engine.cli.shards as shards
import engine.cli.vocab as vocab
from engine.errors import UneraseError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="unerase", description="Detect and explain contentious terms.")
    sub = parser.add_subparsers(dest="command", required=True)
    commands = (
        ("detect", "find vocabulary terms in a text (no LLM)", detect.add_arguments, detect.cmd_detect),
        (
            "analyze",
            "detect, disambiguate, check for attacks, explain and decide",
            analyze.add_arguments,
            analyze.cmd_analyze,
        ),
        ("batch", "analyse every text of a CSV, JSONL or ZIP-of-.txt file", batch.add_arguments, batch.cmd_batch),
        ("eval", "measure a configuration on a labelled CSV or JSONL file", evaluate.add_arguments, evaluate.cmd_eval),
        (
            "audit",
            "counterfactual fairness test: the same sentence about different groups",
            audit.add_arguments,
            audit.cmd_audit,
        ),
    )
    for name, help_text, add_arguments, command in commands:
        command_parser = sub.add_parser(name, help=help_text)
        add_arguments(command_parser)
        command_parser.set_defaults(func=command)
    vocab.add_arguments(sub.add_parser("vocab", help="check, inspect, import and export vocabularies"))
    shards.add_arguments(sub.add_parser("shards", help="check the outputs of --shard K/N runs before merging them"))
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
