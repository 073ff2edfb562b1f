"""`unerase shards check`: whether the outputs of `--shard 1/N` ... `--shard N/N`, made on different machines,
come from the same vocabularies and together hold one result for every record of the input.

unerase shards check OUTPUT.jsonl ... [--input CORPUS.jsonl]

It reads every file once, line by line, and keeps only counts and fixed-size sums, never the ids, so it
checks a corpus of any size in flat memory. Completeness is checked with the input:
- as many result lines as the input has records (non-blank lines);
- the same records: the ids of the input and of the results are compared as multisets, through a sum of a
  64-bit SHA-256 value per id, which does not depend on order. A record without an id, and a line that is not
  a valid record, are only counted (their result line has no id to compare).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from engine.cli.common import open_in, records
from engine.errors import UneraseError

_MASK = (1 << 64) - 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    ssub = parser.add_subparsers(dest="shards_command", required=True)
    check = ssub.add_parser("check", help="check that shard outputs match (vocabulary version) and are complete")
    check.add_argument("outputs", nargs="+", help="the JSONL outputs of detect/analyze --input --shard K/N")
    check.add_argument("--input", help="the corpus the shards were cut from: check that every record has one result")
    check.set_defaults(func=cmd_shards_check)


@dataclass
class Tally:
    """What one side (the input, or the outputs) holds: lines, ids as an order-free sum, versions seen."""

    lines: int = 0
    ids: int = 0
    id_sum: int = 0
    versions: Counter[str] = field(default_factory=Counter)

    def add(self, record_id: Any) -> None:
        self.lines += 1
        if record_id is not None:
            digest = hashlib.sha256(json.dumps(record_id, sort_keys=True).encode("ascii")).digest()
            self.ids += 1
            self.id_sum = (self.id_sum + int.from_bytes(digest[:8], "big")) & _MASK


def cmd_shards_check(args: argparse.Namespace) -> int:
    outputs = Tally()
    problems: list[str] = []
    for name in args.outputs:
        before = outputs.lines
        with open_in(name) as stream:
            for number, line in enumerate(stream, start=1):
                if not line.strip():
                    continue
                try:
                    result = json.loads(line)
                except ValueError:
                    raise UneraseError(f"{name}:{number}: not a result line of unerase (not JSON)") from None
                if not isinstance(result, dict):
                    raise UneraseError(f"{name}:{number}: not a result line of unerase (not an object)")
                outputs.add(result.get("id"))
                version = result.get("vocabulary_version")
                outputs.versions[version if isinstance(version, str) else "(none)"] += 1
        print(f"{name}: {outputs.lines - before} result lines")
    versions = ", ".join(f"{version} ({count} lines)" for version, count in outputs.versions.most_common())
    print(f"vocabulary versions: {versions or 'none'}")
    if len(outputs.versions) > 1 or "(none)" in outputs.versions:
        problems.append(
            "the results do not all carry one vocabulary_version: the shards were analysed with different "
            "vocabularies (or some lines were written by an unerase without the version); run those shards again"
        )
    if args.input:
        corpus = Tally()
        with open_in(args.input) as stream:
            for _, record, _ in records(stream):
                corpus.add(None if record is None else record.get("id"))
        print(f"{args.input}: {corpus.lines} records, {outputs.lines} result lines")
        if corpus.lines != outputs.lines:
            problems.append(
                f"{corpus.lines} records in the input but {outputs.lines} result lines: a shard is missing, "
                "unfinished or given twice (give every output of --shard 1/N to N/N, with one N, once)"
            )
        elif (corpus.ids, corpus.id_sum) != (outputs.ids, outputs.id_sum):
            problems.append("the ids of the results are not the ids of the input: the outputs are of another input")
    for problem in problems:
        print(f"problem: {problem}", file=sys.stderr)
    if not problems:
        print("ok: one vocabulary version" + (", one result per record" if args.input else ""))
    return 1 if problems else 0
