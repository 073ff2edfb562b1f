"""`--shard K/N`: one machine's share of a corpus, so N machines can split one JSONL file between them.

A record belongs to shard K of N when a SHA-256 of its key, read as a number, leaves K-1 over when divided by N.
The key is the record's `id` (its JSON text, so `1` and `"1"` are different ids) or, for a record without an
id and for a line that is not a valid record, its line number. So:

- every line of the input is in exactly one of the N shards, and the N outputs together are the output of
  the whole file (each shard's lines in input order);
- a record with an id lands in the same shard whatever its place in the file, so the machines may read
  copies ordered differently; lines without an id need the same file on every machine;
- the choice does not depend on the process (no `hash()`, which PYTHONHASHSEED changes), the machine or
  the number of `--jobs`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from engine.errors import UneraseError

_FORM = re.compile(r"\s*(\d+)\s*/\s*(\d+)\s*")


@dataclass(frozen=True)
class Shard:
    index: int  # K, from 1
    count: int  # N

    @classmethod
    def parse(cls, text: str) -> Shard:
        form = _FORM.fullmatch(text)
        if form is None:
            raise UneraseError(f"--shard {text!r} is not accepted; give K/N, e.g. 1/4 for the first of four shards")
        index, count = int(form.group(1)), int(form.group(2))
        if count < 1 or not 1 <= index <= count:
            raise UneraseError(
                f"--shard {text!r} is not accepted; in K/N, N is the number of shards (1 or more) "
                f"and K is which one, from 1 to N"
            )
        return cls(index, count)

    def holds(self, number: int, record: dict[str, Any] | None) -> bool:
        """Whether the line `number` (holding `record`, or None when it is not a valid record) is in this shard."""
        if self.count == 1:
            return True
        return shard_of(number, record, self.count) == self.index


def shard_of(number: int, record: dict[str, Any] | None, count: int) -> int:
    """Which of `count` shards (from 1) a line belongs to."""
    record_id = None if record is None else record.get("id")
    # ASCII JSON: an id read with lone surrogates (surrogateescape) still encodes
    key = f"line {number}" if record_id is None else "id " + json.dumps(record_id, sort_keys=True)
    digest = hashlib.sha256(key.encode("ascii")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1
