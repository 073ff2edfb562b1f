"""What every JSON request body shares: its strings are whole Unicode characters.

JSON may spell half of a UTF-16 surrogate pair on its own (`"x \\ud800"`); Python then holds a lone surrogate,
which no database or UTF-8 encoder accepts, so it would fail only when stored (a 500). Every request body
model derives from `JsonBody`, so such a string is refused where all input is checked, with the field named.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, field_validator
from pydantic_core import PydanticCustomError

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """What is wrong with `text` if it holds a lone surrogate (where, which), else None."""
    found = _SURROGATE.search(text)
    if found is None:
        return None
    return (
        f"holds a lone UTF-16 surrogate (U+{ord(found.group()):04X}) at character {found.start()}, which is not a "
        "character; send valid Unicode text (a \\ud83d\\ude00-style escape is accepted only as a complete pair)"
    )


class JsonBody(BaseModel):
    @field_validator("*", mode="before")
    @classmethod
    def _whole_characters(cls, value: Any) -> Any:
        # before pydantic's own checks, whose message for such a string ("unable to parse raw data") names no
        # cause; nested bodies are JsonBody too and check their own fields, lists of plain strings are checked here
        for item in value if isinstance(value, list) else (value,):
            if isinstance(item, str) and (problem := lone_surrogate(item)) is not None:
                raise PydanticCustomError("lone_surrogate", problem)
        return value
