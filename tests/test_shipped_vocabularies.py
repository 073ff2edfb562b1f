"""The vocabularies unerase ships: complete entries and the coverage promised in issue #3."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.paths import shipped_vocabularies
from engine.vocabulary.loader import load_vocabulary
from engine.vocabulary.model import Vocabulary
from engine.vocabulary.stats import vocabulary_stats

MINIMUM_TERMS = {"en": 250, "fr": 100, "el": 100, "de": 100, "nl": 100, "it": 100, "pt": 100}
CHARACTERISTICS = (
    "gender", "sexual-orientation", "race", "ethnicity", "religion", "political-affiliation",
    "socioeconomic-status", "occupation", "age", "disability", "addiction", "physical-appearance",
    "migration-colonial-past",
)  # fmt: skip


def shipped(language: str) -> Vocabulary:
    return load_vocabulary(shipped_vocabularies() / language)


@pytest.mark.parametrize("language", sorted(MINIMUM_TERMS))
def test_vocab_check_passes(language: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["vocab", "check", str(shipped_vocabularies() / language)]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


@pytest.mark.parametrize("language", sorted(MINIMUM_TERMS))
def test_minimum_counts_and_ambiguity(language: str) -> None:
    (stats,) = vocabulary_stats(shipped(language))
    assert stats.terms >= MINIMUM_TERMS[language]
    assert stats.ambiguous_share >= 0.20, f"{language}: {stats.ambiguous_share:.0%} ambiguous"
    floor = 5 if language == "en" else 2
    thin = {c: n for c, n in stats.issues_per_category.items() if c in CHARACTERISTICS and n < floor}
    assert not thin, f"{language}: fewer than {floor} entries for {thin}"


@pytest.mark.parametrize("language", sorted(MINIMUM_TERMS))
def test_every_entry_is_complete(language: str) -> None:
    for issue in shipped(language).issues:
        assert len(issue.description.split()) >= 12, f"{issue.id}: description too short"
        assert issue.categories and issue.sources and issue.terms, issue.id
        for term in issue.terms:
            if term.sense_cues:
                assert term.ambiguous, f"{term.id}: sense cues on a term not marked ambiguous"
