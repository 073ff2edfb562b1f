"""Splitting German and Dutch compounds into their parts, with offsets.

`Zigeunerschnitzel` -> `Zigeuner` + `schnitzel`: a vocabulary noun inside a compound is found
with the offsets of that part. The default splitter is dictionary-based: it picks the
segmentation into the fewest (at least two) parts that the lemmatizer's dictionary knows, allowing the linking
elements of each language between parts (German Mohr-en-straße, Dutch koning-s-huis).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol

from engine.text.lemmatizer import Lemmatizer

LINKS: dict[str, tuple[str, ...]] = {
    "de": ("", "s", "es", "n", "en", "e", "er", "-"),
    "nl": ("", "s", "e", "en", "-"),
}
COMPOUND_LANGUAGES = frozenset(LINKS)
MIN_PART = 3
# Inflectional endings long enough to pass for a part: never the last part of a compound, so a
# word is split before its ending, not after (Neger|kindern, not Negerkind|ern;
# Taubstummen|lehrerinnen, not Taubstummenlehrer|innen).
FINAL_ENDINGS: dict[str, frozenset[str]] = {
    "de": frozenset({"ern", "nen", "innen", "ens"}),
    "nl": frozenset({"nen", "innen", "tje", "tjes", "jes", "etje", "etjes"}),
}


class CompoundSplitter(Protocol):
    def split(self, word: str, language: str) -> tuple[tuple[int, int], ...]:
        """Spans (start, end) of the parts of `word`, or () when it is not a compound."""
        ...


class DictionarySplitter:
    def __init__(self, lemmatizer: Lemmatizer, cache_size: int = 65536) -> None:
        self.lemmatizer = lemmatizer
        self._cached = lru_cache(maxsize=cache_size)(self._split)

    def _known(self, part: str, language: str) -> bool:
        if len(part) < MIN_PART:
            return False
        known = self.lemmatizer.is_known
        return known(part, language) or known(part.lower(), language) or known(part.capitalize(), language)

    def split(self, word: str, language: str) -> tuple[tuple[int, int], ...]:
        return self._cached(word, language)

    def _split(self, word: str, language: str) -> tuple[tuple[int, int], ...]:
        links = LINKS.get(language)
        endings = FINAL_ENDINGS.get(language, frozenset())
        n = len(word)
        if links is None or n < 2 * MIN_PART:
            return ()
        # best[i]: fewest parts covering word[i:], with the part spans
        best: list[tuple[tuple[int, int], ...] | None] = [None] * (n + 1)
        best[n] = ()
        for i in range(n - MIN_PART, -1, -1):
            choice: tuple[tuple[int, int], ...] | None = None
            for j in range(n, i + MIN_PART - 1, -1):
                if (i, j) == (0, n) or not self._known(word[i:j], language):
                    continue
                if j == n and word[i:j].lower() in endings:
                    continue
                for link in links:
                    k = j + len(link)
                    # A link joins two parts; at the end of the word it would hide an
                    # inflection (zigeunerkamp-en is zigeuner + kampen).
                    if (link and k >= n) or k > n or word[j:k].lower() != link or best[k] is None:
                        continue
                    rest = best[k]
                    assert rest is not None
                    if choice is None or len(rest) + 1 < len(choice):
                        choice = ((i, j), *rest)
            best[i] = choice
        parts = best[0]
        return parts if parts is not None and len(parts) > 1 else ()
