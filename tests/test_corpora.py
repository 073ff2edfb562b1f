"""The team's test corpora (tests/corpora/<lang>/*.yaml) against the shipped vocabularies.

Every expected hit must be found with its exact span; any other hit must be of a term marked
ambiguous (a neutral control may still *match* an ambiguous word: deciding its sense is the
disambiguation stage's job); sentences of kind `name` must give no hit at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from engine.detector import Detector
from engine.paths import shipped_vocabularies
from engine.vocabulary.loader import load_vocabulary

CORPORA = Path(__file__).resolve().parent / "corpora"
KINDS = {
    "hateful",
    "neutral",
    "quoted",
    "reclaimed",
    "reported",
    "historical",
    "counter-speech",
    "name",
    "obfuscated",
    "compound",
    "title",
    "form",
}


@dataclass(frozen=True)
class Expected:
    issue: str
    start: int
    end: int
    status: str | None
    variant: bool = False


@dataclass(frozen=True)
class Sentence:
    where: str
    language: str
    text: str
    kind: str
    hits: tuple[Expected, ...]


def _expected(text: str, where: str, hit: dict[str, object]) -> Expected:
    surface = str(hit["surface"])
    occurrence = int(hit.get("occurrence", 1))  # type: ignore[call-overload]
    start = -1
    for _ in range(occurrence):
        start = text.find(surface, start + 1)
        if start < 0:
            raise AssertionError(f"{where}: surface {surface!r} (occurrence {occurrence}) is not in the text")
    status = hit.get("status")
    return Expected(
        str(hit["issue"]), start, start + len(surface), str(status) if status else None, bool(hit.get("variant"))
    )


def load_corpora() -> list[Sentence]:
    sentences = []
    for path in sorted(CORPORA.glob("*/*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        language = data["language"]
        assert language == path.parent.name, f"{path}: language {language!r} is not the folder name"
        for n, item in enumerate(data["sentences"], start=1):
            where = f"{path.relative_to(CORPORA)}#{n}"
            assert item["kind"] in KINDS, f"{where}: unknown kind {item['kind']!r}; accepted: {sorted(KINDS)}"
            hits = tuple(_expected(item["text"], where, h) for h in item.get("hits") or [])
            sentences.append(Sentence(where, language, item["text"], item["kind"], hits))
    return sentences


SENTENCES = load_corpora()


_DETECTORS: dict[str, Detector] = {}


def detector_for(language: str) -> Detector:
    """One detector per language, so a broken vocabulary fails only its own language's sentences."""
    if language not in _DETECTORS:
        _DETECTORS[language] = Detector(load_vocabulary(shipped_vocabularies() / language))
    return _DETECTORS[language]


@pytest.mark.parametrize("sentence", SENTENCES, ids=[s.where for s in SENTENCES])
def test_corpus_sentence(sentence: Sentence) -> None:
    hits = detector_for(sentence.language).detect(sentence.text, sentence.language).hits
    got = {(h.issue.id, h.start, h.end) for h in hits}
    for expected in sentence.hits:
        assert (expected.issue, expected.start, expected.end) in got, (
            f"{sentence.where}: expected {expected.issue} at {expected.start}:{expected.end} "
            f"({sentence.text[expected.start : expected.end]!r}); found "
            f"{[(h.issue.id, h.surface, h.start, h.end) for h in hits]}"
        )
    variants = {(h.issue.id, h.start, h.end) for h in hits if h.variant}
    for expected in sentence.hits:
        if expected.variant:
            assert (expected.issue, expected.start, expected.end) in variants, (
                f"{sentence.where}: {sentence.text[expected.start : expected.end]!r} is not marked as a variant"
            )
    wanted = {(e.issue, e.start, e.end) for e in sentence.hits}
    extra = [h for h in hits if (h.issue.id, h.start, h.end) not in wanted]
    if sentence.kind == "name":
        assert not hits, f"{sentence.where}: a name gave hits {[(h.surface, h.issue.id) for h in hits]}"
    assert all(h.ambiguous for h in extra), (
        f"{sentence.where}: unexpected hits of non-ambiguous terms {[(h.surface, h.issue.id) for h in extra]}"
    )


def test_corpora_cover_every_language_and_kind() -> None:
    languages = {s.language for s in SENTENCES}
    assert languages >= {"en", "fr", "el", "de", "nl", "it", "pt"}
    for language in sorted(languages):
        of_language = [s for s in SENTENCES if s.language == language]
        assert len(of_language) >= 60, f"{language}: {len(of_language)} sentences, at least 60 needed"
        kinds = {s.kind for s in of_language}
        assert kinds >= {"hateful", "neutral", "name", "obfuscated"}, f"{language}: kinds {sorted(kinds)}"


def test_issue_15_corpora_cover_titles_names_and_forms_in_every_language() -> None:
    """Title case and sentence starts, names, and word forms: the sentences of issue 15."""
    needed = {"title": 30, "name": 20, "form": 20}
    for language in ("en", "fr", "el", "de", "nl", "it", "pt"):
        for kind, least in needed.items():
            count = sum(1 for s in SENTENCES if s.language == language and s.kind == kind)
            assert count >= least, f"{language}: {count} sentences of kind {kind!r}, at least {least} needed"


_UNFILTERED: dict[str, Detector] = {}


@pytest.mark.parametrize("language", ["en", "fr", "el", "de", "nl", "it", "pt"])
def test_name_sentences_hold_a_word_the_name_filter_removes(language: str) -> None:
    """A `name` sentence tests the name filter only if, without it, the sentence gives a hit."""
    if language not in _UNFILTERED:
        vocabulary = load_vocabulary(shipped_vocabularies() / language)
        _UNFILTERED[language] = Detector(vocabulary, filter_names=False)
    detector = _UNFILTERED[language]
    idle = [
        s.where
        for s in SENTENCES
        if s.language == language and s.kind == "name" and not detector.detect(s.text, language).hits
    ]
    assert not idle, f"name sentences without any vocabulary word: {idle}"


def test_the_fresh_held_out_set_has_mentions_reclaimed_uses_and_attacks_in_every_language() -> None:
    """tests/corpora/<lang>/heldout.yaml (issue 15): never tuned on, measured by benchmarks/bench_uses.py."""
    for language in ("en", "fr", "el", "de", "nl", "it", "pt"):
        held = [s for s in SENTENCES if s.language == language and s.where.startswith(f"{language}/heldout.yaml")]
        mentions = sum(1 for s in held if s.kind in {"quoted", "reported", "historical", "counter-speech"})
        reclaimed = sum(1 for s in held if s.kind == "reclaimed")
        attacks = sum(1 for s in held if s.kind == "hateful")
        assert mentions >= 15 and reclaimed >= 8 and attacks >= 10, f"{language}: {mentions}, {reclaimed}, {attacks}"


@pytest.mark.parametrize("name", [f"heldout{n}.yaml" for n in range(2, 16)])
def test_the_later_held_out_sets_have_every_kind_of_mention_and_attacks_in_every_language(name: str) -> None:
    """tests/corpora/<lang>/heldout2.yaml to heldout15.yaml (issue 15): each written before the
    changes that read the previous set's misses, never tuned or trained on while blind; measured by
    benchmarks/bench_uses.py as its own set."""
    for language in ("en", "fr", "el", "de", "nl", "it", "pt"):
        held = [s for s in SENTENCES if s.language == language and s.where.startswith(f"{language}/{name}")]
        counts = {kind: sum(1 for s in held if s.kind == kind) for kind in KINDS}
        mentions = sum(counts[k] for k in ("quoted", "reported", "historical", "counter-speech", "reclaimed"))
        attacks = counts["hateful"]
        assert mentions >= 25 and attacks >= 12, f"{language}: {mentions} mentions, {attacks} attacks"
        for kind in ("quoted", "reported", "reclaimed", "historical", "counter-speech"):
            assert counts[kind] >= 3, f"{language}: {counts[kind]} sentences of kind {kind!r}, at least 3 needed"
