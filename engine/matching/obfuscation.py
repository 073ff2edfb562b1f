"""Finding deliberately disguised spellings: leetspeak, separators, masks, repeated letters.

Each finder scans the whole text with one regular expression and yields spans with the plain
strings they may stand for; the matcher looks those strings up like ordinary tokens. Finders
only propose: a span becomes a hit only if a decoded form is a vocabulary term.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

# Symbols and digits people substitute for letters; several letters where readings differ.
LEET: dict[str, tuple[str, ...]] = {
    "0": ("o",),
    "1": ("i", "l"),
    "3": ("e",),
    "4": ("a",),
    "5": ("s",),
    "6": ("g",),
    "7": ("t",),
    "8": ("b",),
    "9": ("g",),
    "@": ("a",),
    "$": ("s",),
    "!": ("i",),
    "|": ("l", "i"),
    "+": ("t",),
    "€": ("e",),
}
# In a Greek word the same symbols stand for Greek letters (πρεζ@κιας, γύφτ0ς).
GREEK_LEET: dict[str, tuple[str, ...]] = {
    "0": ("ο",),
    "1": ("ι",),
    "3": ("ε",),
    "4": ("α",),
    "7": ("τ",),
    "8": ("β",),
    "9": ("θ",),
    "@": ("α",),
    "$": ("σ",),
    "!": ("ι",),
}
LEET_IN_GREEK = {**LEET, **GREEK_LEET}
# Letters of another script that look like (or are read as) a letter of the word's own script:
# Latin letters slipped into Greek words (ΓΥΦΤOΣ with a Latin O, πουsτη) and Cyrillic or Greek
# letters slipped into Latin words (nіgger with a Cyrillic і).
TO_GREEK = dict(zip("abehiklmnoprstuvxyz", "αβεηικλμνορρστυνχυζ", strict=True))
TO_LATIN = dict(
    zip("аеіјорсухѕԁɡνοαιкмтвн", "aeijopcyxsdgvoaikmtbh", strict=True)
)  # fmt: skip
MASKS = "*#"
_SYMBOLS = re.escape("".join(k for k in LEET if not k.isdigit()) + MASKS)
MAX_VARIANTS = 8
MAX_SEPARATED = 24  # longer runs of single letters are not words

# A run of word characters and substitution symbols containing at least one digit or symbol.
LEET_RE = re.compile(rf"(?<![\w{_SYMBOLS}])[\w{_SYMBOLS}]*[0-9{_SYMBOLS}][\w{_SYMBOLS}]*")
# Single characters separated by one repeated separator: f.a.g, f a g, f-a-g, f_a_g, f·a·g.
SEPARATED_RE = re.compile(r"(?<![\w.\-·•])([^\W_])([.\-_·• ])(?:[^\W_]\2)+[^\W_](?![\w·•]|\.\w|-\w)")
REPEAT_RE = re.compile(r"([^\W\d_])\1{2,}")
GREEK_RE = re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]")
# A word with both an ASCII letter and a Greek or Cyrillic one; found by the regex engine alone,
# so plain Greek or Latin text costs no Python work per word.
MIXED_WORD_RE = re.compile(r"(?<!\w)(?=\w*[a-zA-Z])(?=\w*[\u0370-\u03ff\u1f00-\u1fff\u0400-\u052f])[^\W\d_]{3,}(?!\w)")


@dataclass(frozen=True, slots=True)
class Disguised:
    """A span of the text and the plain strings it may stand for (masks kept as '*')."""

    start: int
    end: int
    readings: tuple[str, ...]
    masked: bool


def leet_readings(text: str) -> tuple[str, ...]:
    """Every plain reading of `text`, masks turned into '*', at most MAX_VARIANTS."""
    table = LEET_IN_GREEK if GREEK_RE.search(text) else LEET
    options = [table.get(c, ("*",) if c in MASKS else (c,)) for c in text.lower()]
    return tuple("".join(p) for p in itertools.islice(itertools.product(*options), MAX_VARIANTS))


def collapse_repeats(text: str) -> tuple[str, ...]:
    """Runs of three or more identical letters shortened to two, then to one."""
    if not REPEAT_RE.search(text):
        return ()
    return tuple(dict.fromkeys((REPEAT_RE.sub(r"\1\1", text), REPEAT_RE.sub(r"\1", text))))


def unmix_scripts(word: str) -> str | None:
    """The reading of a word that mixes Greek or Cyrillic letters with Latin ones (as found by
    MIXED_WORD_RE), in the script most of its letters use; None when a mostly Latin word keeps a
    letter that has no Latin look-alike."""
    lower = word.lower()
    greek = sum(bool(GREEK_RE.match(c)) for c in lower)
    if greek > sum("a" <= c <= "z" for c in lower):
        return "".join(TO_GREEK.get(c, c) for c in lower)
    reading = "".join(TO_LATIN.get(c, c) for c in lower)
    return reading if all(c.isascii() for c in reading) else None


def find_disguised(text: str) -> Iterator[Disguised]:
    for match in LEET_RE.finditer(text):
        # A leading '#' or '@' makes a hashtag or a mention, not a disguised letter.
        span = match.group().lstrip("#@")
        start, end = match.end() - len(span), match.end()
        # Trailing '!' or '|' is far more often punctuation than a letter: also try without it.
        trimmed = span.rstrip("!|+")
        for candidate, cand_end in ((span, end), (trimmed, start + len(trimmed))):
            if len(candidate) < 3 or not any(c.isalpha() for c in candidate):
                continue
            if candidate.isalpha():
                continue  # a plain word: the ordinary matcher handles it
            readings = leet_readings(candidate)
            readings += tuple(c for r in readings for c in collapse_repeats(r))
            yield Disguised(start, cand_end, tuple(dict.fromkeys(readings)), any(m in candidate for m in MASKS))
            if candidate == trimmed:
                break
    for match in SEPARATED_RE.finditer(text):
        # A run such as "f a g s u c k" may hold a term in any part of it: try every sub-run.
        letters = [(match.start() + i, c) for i, c in enumerate(match.group()) if i % 2 == 0]
        if len(letters) > MAX_SEPARATED:
            continue
        for i in range(len(letters)):
            for j in range(len(letters), i + 2, -1):
                joined = "".join(c for _, c in letters[i:j])
                yield Disguised(letters[i][0], letters[j - 1][0] + 1, leet_readings(joined), False)
    for match in MIXED_WORD_RE.finditer(text):
        reading = unmix_scripts(match.group())
        if reading is not None:
            yield Disguised(match.start(), match.end(), (reading,), False)


def mask_matches(pattern: str, form: str) -> bool:
    """Does a masked reading ('n*****') fit a plain form of the same length?"""
    return len(pattern) == len(form) and all(p == "*" or p == f for p, f in zip(pattern, form, strict=True))
