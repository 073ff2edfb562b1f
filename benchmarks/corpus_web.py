"""Texts and upload files for the web benchmarks, made deterministically from a seed.

Texts with hits join sentences from the team's test corpus (tests/corpora/<lang>/*.yaml) that
expect at least one hit, so every text is known to contain vocabulary terms. Texts without hits
are filler from benchmarks/corpus.py with no term inserted, kept only when the real detector
finds nothing in them (a filler word could still lemmatize to a term).
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from benchmarks.corpus import generate
from engine.detector import Detector

CORPORA = Path(__file__).resolve().parent.parent / "tests" / "corpora"


@dataclass(frozen=True)
class TextSet:
    with_hits: list[str]
    without_hits: list[str]

    def shuffled(self, seed: int) -> list[str]:
        """Both kinds in one list, in an order fixed by the seed."""
        texts = self.with_hits + self.without_hits
        random.Random(seed).shuffle(texts)
        return texts


def sentences_with_hits(language: str = "en") -> list[str]:
    sentences = []
    for path in sorted((CORPORA / language).glob("*.yaml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        sentences += [item["text"] for item in document["sentences"] if item.get("hits")]
    if not sentences:
        raise SystemExit(f"no sentence with hits in {CORPORA / language}; the web benchmarks need the test corpus")
    return sentences


def cut(text: str, chars: int) -> str:
    """At most `chars` characters, ending at a word boundary so no word is cut in half."""
    if len(text) <= chars:
        return text
    end = text.rfind(" ", 0, chars + 1)
    return text[: end if end > 0 else chars]


def texts_with_hits(count: int, chars: int, seed: int, language: str = "en") -> list[str]:
    """`count` texts of about `chars` characters, each a random run of corpus sentences that have hits."""
    rng = random.Random(seed)
    sentences = sentences_with_hits(language)
    texts = []
    for _ in range(count):
        parts: list[str] = []
        while sum(len(p) + 1 for p in parts) < chars:
            parts.append(rng.choice(sentences))
        texts.append(cut(" ".join(parts), chars))
    return texts


def texts_without_hits(count: int, chars: int, seed: int, detector: Detector, language: str = "en") -> list[str]:
    """`count` filler texts of about `chars` characters in which the detector finds no hit."""
    vocabulary = detector.vocabulary.for_language(language)
    texts: list[str] = []
    attempt = 0
    while len(texts) < count:
        if attempt == 10:
            raise SystemExit(f"could not make {count} texts without hits after {attempt} rounds of filler")
        # ask for more than needed: some documents are dropped for containing a term
        corpus = generate(vocabulary, language, 2 * count * chars, seed=seed + attempt, hit_every=10**9,
                          document_chars=chars)  # fmt: skip
        for document in corpus.documents:
            text = cut(document, chars)
            if len(texts) < count and not detector.detect(text, language).hits:
                texts.append(text)
        attempt += 1
    return texts


def text_set(count: int, chars: int, detector: Detector, hit_share: float, seed: int = 20261124) -> TextSet:
    with_hits = round(count * hit_share)
    return TextSet(
        texts_with_hits(with_hits, chars, seed),
        texts_without_hits(count - with_hits, chars, seed, detector),
    )


def csv_upload(texts: list[str], rows: int) -> bytes:
    """A CSV file (columns id, text) of `rows` records cycling through `texts`."""
    buffer = io.StringIO()
    out = csv.writer(buffer)
    out.writerow(["id", "text"])
    for n in range(rows):
        out.writerow([f"r{n}", texts[n % len(texts)]])
    return buffer.getvalue().encode("utf-8")
