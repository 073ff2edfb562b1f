"""One line of a user's JSON Lines file, parsed the same way by every reader (batches, `detect --input`,
labelled files for `eval`, precedent imports).

`json.loads` fails on a line in two ways that are both the line's fault: text that is not JSON
(`JSONDecodeError`) and arrays or objects nested deeper than the parser's stack (`RecursionError`, `[` x 100,000).
Both become one `UnreadableLine`, which each reader turns into that row's error in its own words; a reader that
caught only the first crashed on the second.
"""

from __future__ import annotations

import json
from typing import Any


class UnreadableLine(ValueError):
    """Why a line is not JSON: `reason` in a few words, `problem` with the column where one is known."""

    def __init__(self, reason: str, column: int | None) -> None:
        self.reason = reason
        self.column = column
        self.problem = reason if column is None else f"{reason[:-1]} at column {column})"
        super().__init__(self.problem)


def parse_line(line: str) -> Any:
    """The JSON value of one line, or UnreadableLine."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise UnreadableLine(f"not valid JSON ({exc.msg})", exc.colno) from None
    except RecursionError:
        raise UnreadableLine("the JSON is nested too deeply to read", None) from None
