"""A deterministic generated corpus for the matcher benchmarks.

Filler words come from simplemma's English word list (shipped with the package), drawn with
Zipf-like weights so common words repeat as in real text; vocabulary terms are inserted at a
fixed rate, some inflected, capitalized or disguised. The same seed gives the same corpus.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

from engine.matching.obfuscation import LEET
from engine.vocabulary.model import Vocabulary

_LEET_BACK = {letters[0]: symbol for symbol, letters in LEET.items() if symbol in "013457@$"}


@dataclass(frozen=True)
class Corpus:
    documents: list[str]
    inserted: int
    disguised: int
    spans: list[list[tuple[int, int]]]  # per document, the spans of the inserted terms

    @property
    def chars(self) -> int:
        return sum(len(d) for d in self.documents)


def filler_words(vocabulary: Vocabulary, language: str, size: int, rng: random.Random) -> list[str]:
    from simplemma.strategies.dictionaries.dictionary_factory import DEFAULT_DICTIONARY_FACTORY

    taken = {w.casefold() for t in vocabulary.terms(language) for w in t.literal.split()}
    words = sorted(
        w
        for w in DEFAULT_DICTIONARY_FACTORY.get_dictionary(language)
        if w.isalpha() and w.islower() and 2 <= len(w) <= 12 and w not in taken
    )
    return rng.sample(words, size)


def disguise(word: str, rng: random.Random) -> str:
    choice = rng.randrange(3)
    if choice == 0:
        return "".join(_LEET_BACK.get(c, c) if rng.random() < 0.5 else c for c in word)
    if choice == 1 and len(word) <= 6:
        return ".".join(word)
    i = rng.randrange(1, len(word))
    return word[:i] + word[i] * 3 + word[i + 1 :]


def generate(
    vocabulary: Vocabulary,
    language: str,
    target_chars: int,
    *,
    seed: int = 20261122,
    hit_every: int = 60,
    disguise_share: float = 0.15,
    document_chars: int = 2000,
) -> Corpus:
    """Documents of about `document_chars`, one term per `hit_every` words on average."""
    rng = random.Random(seed)
    words = filler_words(vocabulary, language, 5000, rng)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    terms = [t.literal for t in vocabulary.terms(language) if any(c.isalpha() for c in t.literal)]
    documents: list[str] = []
    inserted = disguised = total = 0

    def sentences() -> Iterator[tuple[str, list[tuple[int, int]]]]:
        nonlocal inserted, disguised
        while True:
            n = rng.randint(8, 22)
            sentence = rng.choices(words, weights, k=n)
            marked = set()
            for i in range(1, n):  # never first: a capitalized first word is not a name test here
                if rng.randrange(hit_every) == 0:
                    term = rng.choice(terms)
                    if rng.random() < disguise_share and " " not in term and len(term) >= 3:
                        term = disguise(term.lower(), rng)
                        disguised += 1
                    elif rng.random() < 0.2:
                        term = term.upper()
                    sentence[i] = term
                    marked.add(i)
                    inserted += 1
            sentence[0] = sentence[0][:1].upper() + sentence[0][1:]
            spans, position = [], 0
            for i, word in enumerate(sentence):
                if i in marked:
                    spans.append((position, position + len(word)))
                position += len(word) + 1
            yield " ".join(sentence) + rng.choice([".", ".", ".", "?", "!"]), spans

    stream = sentences()
    all_spans: list[list[tuple[int, int]]] = []
    while total < target_chars:
        parts: list[str] = []
        doc_spans: list[tuple[int, int]] = []
        size = 0
        while size < document_chars:
            sentence, spans = next(stream)
            doc_spans += [(size + a, size + b) for a, b in spans]
            parts.append(sentence)
            size += len(sentence) + 1
        document = " ".join(parts)
        documents.append(document)
        all_spans.append(doc_spans)
        total += len(document)
    return Corpus(documents, inserted, disguised, all_spans)
