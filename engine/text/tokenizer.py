"""Tokenization with exact character offsets into the original string."""

from __future__ import annotations

import re
from typing import NamedTuple, Protocol

from engine.text.normalize import INVISIBLE

# Combining marks that may follow a base letter in decomposed text (é as e + U+0301).
_MARKS = "\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f"
# A word: a letter or digit, then letters, digits, marks, and invisible characters that sit
# *between* word characters (an invisible char at the edge is not part of the word).
WORD_PATTERN = rf"\w(?:[\w{_MARKS}]|[{INVISIBLE}]+(?=\w))*"
WORD_RE = re.compile(WORD_PATTERN)


class Token(NamedTuple):
    """A word and its offsets: text[start:end] == token.text. A tuple because it is the
    most numerous object the engine makes (one per word) and tuples are cheapest to build."""

    start: int
    end: int
    text: str


class Tokenizer(Protocol):
    def tokenize(self, text: str) -> list[Token]: ...


class RegexTokenizer:
    """Words as runs of Unicode word characters; punctuation, spaces and emoji separate them."""

    def __init__(self, pattern: re.Pattern[str] = WORD_RE) -> None:
        self.pattern = pattern

    def tokenize(self, text: str) -> list[Token]:
        return [Token(m.start(), m.end(), m.group()) for m in self.pattern.finditer(text)]

    def words(self, text: str) -> list[str]:
        return self.pattern.findall(text)
