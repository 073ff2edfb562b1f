"""Tokenization with exact character offsets into the original string."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from engine.text.normalize import INVISIBLE

# Combining marks that may follow a base letter in decomposed text (é as e + U+0301).
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
# A word: a letter or digit, then letters, digits, marks, and invisible characters that sit
# *between* word characters (an invisible char at the edge is not part of the word).
WORD_PATTERN = rf"\w(?:[\w{_MARKS}]|[{INVISIBLE}]+(?=\w))*"
WORD_RE = re.compile(WORD_PATTERN)


@dataclass(frozen=True, slots=True)
class Token:
    start: int
    end: int
    text: str


class Tokenizer(Protocol):
    def tokenize(self, text: str) -> Iterator[Token]: ...


class RegexTokenizer:
    """Words as runs of Unicode word characters; punctuation, spaces and emoji separate them."""

    def __init__(self, pattern: re.Pattern[str] = WORD_RE) -> None:
        self.pattern = pattern

    def tokenize(self, text: str) -> Iterator[Token]:
        for match in self.pattern.finditer(text):
            yield Token(match.start(), match.end(), match.group())

    def words(self, text: str) -> list[str]:
        return self.pattern.findall(text)
