"""Folding of surface forms into matching keys: case-insensitive, accent-insensitive where the
language allows it, blind to zero-width characters and soft hyphens."""

from __future__ import annotations

import re
import unicodedata

# Characters people slip into words to dodge filters, and that never change a word's meaning.
INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_INVISIBLE_RE = re.compile(f"[{INVISIBLE}]")

# Languages where diacritics distinguish words that must not be confused (German schwul/schwül).
KEEP_DIACRITICS = frozenset({"de"})


def strip_marks(text: str) -> str:
    decomposed = unicodedata.normalize("NFD", text)
    return unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))


def fold(text: str, language: str) -> str:
    """The matching key of a surface form or lemma."""
    text = _INVISIBLE_RE.sub("", text).casefold()
    if language in KEEP_DIACRITICS:
        return unicodedata.normalize("NFC", text)
    return strip_marks(text)


def fold_with_offsets(text: str, language: str) -> tuple[str, list[int]]:
    """Fold `text` char by char and return, for each folded char, the index of its source char.

    Slower than `fold`; used only on the rare tokens that are split or de-obfuscated, where a
    part of the folded form must be mapped back to exact offsets in the original.
    """
    out: list[str] = []
    index: list[int] = []
    for i, char in enumerate(text):
        folded = fold(char, language)
        out.append(folded)
        index.extend([i] * len(folded))
    return "".join(out), index
