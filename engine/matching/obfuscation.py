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
MASKS = "*#"
_SYMBOLS = re.escape("".join(k for k in LEET if not k.isdigit()) + MASKS)
MAX_VARIANTS = 8
MAX_SEPARATED = 24  # longer runs of single letters are not words

# A run of word characters and substitution symbols containing at least one digit or symbol.
LEET_RE = re.compile(rf"(?<![\w{_SYMBOLS}])[\w{_SYMBOLS}]*[0-9{_SYMBOLS}][\w{_SYMBOLS}]*")
# Single characters separated by one repeated separator: f.a.g, f a g, f-a-g, f_a_g, f·a·g.
SEPARATED_RE = re.compile(r"(?<![\w.\-·•])([^\W_])([.\-_·• ])(?:[^\W_]\2)+[^\W_](?![\w·•]|\.\w|-\w)")
REPEAT_RE = re.compile(r"([^\W\d_])\1{2,}")


@dataclass(frozen=True, slots=True)
class Disguised:
    """A span of the text and the plain strings it may stand for (masks kept as '*')."""

    start: int
    end: int
    readings: tuple[str, ...]
    masked: bool


def leet_readings(text: str) -> tuple[str, ...]:
    """Every plain reading of `text`, masks turned into '*', at most MAX_VARIANTS."""
    options = [LEET.get(c, ("*",) if c in MASKS else (c,)) for c in text.lower()]
    return tuple("".join(p) for p in itertools.islice(itertools.product(*options), MAX_VARIANTS))


def collapse_repeats(text: str) -> tuple[str, ...]:
    """Runs of three or more identical letters shortened to two, then to one."""
    if not REPEAT_RE.search(text):
        return ()
    return tuple(dict.fromkeys((REPEAT_RE.sub(r"\1\1", text), REPEAT_RE.sub(r"\1", text))))


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


def mask_matches(pattern: str, form: str) -> bool:
    """Does a masked reading ('n*****') fit a plain form of the same length?"""
    return len(pattern) == len(form) and all(p == "*" or p == f for p, f in zip(pattern, form, strict=True))
