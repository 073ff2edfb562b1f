from __future__ import annotations

from pathlib import Path

import pytest

from engine.detector import Detector
from engine.vocabulary.loader import load_vocabulary


def found(detector: Detector, text: str, lang: str) -> list[tuple[str, str, bool]]:
    result = detector.detect(text, lang)
    for hit in result.hits:
        assert text[hit.start : hit.end] == hit.surface
    return [(h.surface, h.term.literal, h.obfuscated) for h in result.hits]


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        # lemmas: inflected forms find the term; the variant closest to the surface is reported
        ("They called him a cripple.", "en", [("cripple", "cripple", False)]),
        ("Those CRIPPLES again", "en", [("CRIPPLES", "cripples", False)]),
        ("The strike crippled the port.", "en", [("crippled", "crippled", False)]),
        # multi-word terms: same lemmas, same order, only spaces or hyphens between
        ("no more welfare queens here", "en", [("welfare queens", "welfare queens", False)]),
        ("the welfare\nqueen", "en", [("welfare\nqueen", "welfare queen", False)]),
        ("welfare, queen", "en", []),
        ("queen welfare", "en", []),
        (
            "a half caste family; half-castes",
            "en",
            [("half caste", "half-caste", False), ("half-castes", "half-castes", False)],
        ),
        # whole tokens only: no hits inside unrelated words
        ("He sniggered at Nigeria's spazio and the junk", "en", []),
        # accents and case (Greek final sigma, missing accents, capitals)
        ("Ο ΠΟΥΣΤΗΣ και οι πουστηδες", "el", [("ΠΟΥΣΤΗΣ", "πούστης", False), ("πουστηδες", "πούστηδες", False)]),
        ("άσε τους γυφτους", "el", [("γυφτους", "γύφτος", False)]),
        # German and Dutch compounds: the part, with its own offsets
        ("Ein Zigeunerschnitzel bitte", "de", [("Zigeuner", "Zigeuner", False)]),
        ("an der Mohrenstraße", "de", [("Mohren", "Mohren", False)]),
        ("Schwuchtelparade", "de", [("Schwuchtel", "Schwuchtel", False)]),
        ("oude zigeunermuziek", "nl", [("zigeuner", "zigeuner", False)]),
        ("Die Zigeunerin", "de", [("Zigeunerin", "Zigeunerin", False)]),
    ],
)
def test_plain_matching(detector: Detector, text: str, lang: str, expected: list[tuple[str, str, bool]]) -> None:
    assert found(detector, text, lang) == expected


def test_german_keeps_umlauts_apart(tmp_path: Path) -> None:
    (tmp_path / "de").mkdir()
    (tmp_path / "de" / "v.yaml").write_text(
        "format: unerase-vocabulary/1\nlanguage: de\nissues:\n  - id: de-schwul\n    categories: [sexual-orientation]\n"
        "    description: Ein Testeintrag.\n    sources: [https://example.org]\n    terms: [schwul]\n",
        encoding="utf-8",
    )
    detector = Detector(load_vocabulary(tmp_path), use_cache=False)
    assert found(detector, "Es ist schwül heute", "de") == []
    assert found(detector, "das ist schwul", "de") == [("schwul", "schwul", False)]


@pytest.mark.parametrize(
    ("text", "lang", "expected"),
    [
        ("Il dottor Mario Sordo ha parlato.", "it", []),
        ("Ieri il sig. Sordo è arrivato.", "it", []),
        ("Abbiamo incontrato Sordo Rossi in piazza.", "it", []),
        ("Quel sordo non capisce niente", "it", [("sordo", "sordo", False)]),
        ("Marco Cripple presented the budget.", "en", []),
        ("Yesterday Mr. Cripple said so.", "en", []),
        ("You Cripple!", "en", [("Cripple", "cripple", False)]),
    ],
)
def test_names_are_not_hits(detector: Detector, text: str, lang: str, expected: list[tuple[str, str, bool]]) -> None:
    assert found(detector, text, lang) == expected


@pytest.mark.parametrize(
    ("text", "surface", "term"),
    [
        ("you n1g", "n1g", "nig"),
        ("what a f@g", "f@g", "fag"),
        ("stop it f4gg0t", "f4gg0t", "faggot"),
        ("$paz", "$paz", "spaz"),
        ("a junk!e!", "junk!e", "junkie"),
        ("shut up f.a.g", "f.a.g", "fag"),
        ("shut up f a g", "f a g", "fag"),
        ("what a f a g g o t lol", "f a g g o t", "faggot"),
        ("the f-a-g-s", "f-a-g-s", "fags"),
        ("total f*g", "f*g", "fag"),
        ("fa**ot", "fa**ot", "faggot"),
        ("faaaaggot", "faaaaggot", "faggot"),
        ("spazzzz", "spazzzz", "spazz"),
        ("cr1ppl3s everywhere", "cr1ppl3s", "cripples"),
        ("n\u200bi\u200bg", "n\u200bi\u200bg", "nig"),  # zero-width characters are simply ignored
    ],
)
def test_obfuscated_spellings(detector: Detector, text: str, surface: str, term: str) -> None:
    hits = detector.detect(text, "en").hits
    assert [(h.surface, h.term.literal) for h in hits] == [(surface, term)]
    assert hits[0].obfuscated is (surface != "n\u200bi\u200bg")


def test_no_obfuscation_false_alarms(detector: Detector) -> None:
    text = "In 2024 we paid $100 for #hashtags, e.g. 3 f.o.g lights, a b c, I a m, and 5 * 3 = 15!"
    assert found(detector, text, "en") == []
    assert found(Detector(detector.vocabulary, obfuscation=False, use_cache=False), "n1g f*g", "en") == []


def test_masking_that_fits_several_terms_gives_candidates(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    issues = "".join(
        f"  - id: en-{w}\n    categories: [other]\n    description: Test entry.\n"
        f"    sources: [https://example.org]\n    terms: [{w}]\n"
        for w in ("dyke", "dike", "dork")
    )
    (tmp_path / "en" / "v.yaml").write_text(
        f"format: unerase-vocabulary/1\nlanguage: en\nissues:\n{issues}", encoding="utf-8"
    )
    detector = Detector(load_vocabulary(tmp_path), use_cache=False)
    (hit,) = detector.detect("you d*ke", "en").hits
    assert hit.obfuscated and hit.surface == "d*ke"
    assert sorted(hit.candidates) == ["dike", "dyke"] and hit.term.literal in hit.candidates
    (hit,) = detector.detect("you d*rk", "en").hits
    assert hit.term.literal == "dork" and hit.candidates == ()


def test_overlaps_keep_the_longest(tmp_path: Path) -> None:
    (tmp_path / "en").mkdir()
    issues = "".join(
        f"  - id: en-{i}\n    categories: [other]\n    description: Test entry.\n"
        f"    sources: [https://example.org]\n    terms: [{w}]\n"
        for i, w in enumerate(("queen", "welfare queen", "welfare", "queen bee sting"))
    )
    (tmp_path / "en" / "v.yaml").write_text(
        f"format: unerase-vocabulary/1\nlanguage: en\nissues:\n{issues}", encoding="utf-8"
    )
    detector = Detector(load_vocabulary(tmp_path), use_cache=False)
    assert found(detector, "a welfare queen bee sting", "en") == [
        ("welfare", "welfare", False),
        ("queen bee sting", "queen bee sting", False),
    ]
    assert found(detector, "a welfare queen", "en") == [("welfare queen", "welfare queen", False)]


def test_hit_payload_carries_the_vocabulary_information(detector: Detector) -> None:
    (hit,) = detector.detect("a half-caste child", "en").hits
    data = hit.to_dict()
    assert data["start"] == 2 and data["end"] == 12
    assert data["term"] == "half-caste" and data["issue_id"] == "en-half-caste"
    assert data["categories"] == ["race", "migration-colonial-past"]
    assert data["suggested_terms"] == ["mixed race", "of mixed heritage"]
    assert data["sources"] == ["https://en.wiktionary.org/wiki/half-caste"]
    assert data["description"].startswith("A colonial-era label")
    assert data["uri"] == "urn:unerase:en:en-half-caste"
    assert data["ambiguous"] is False and data["obfuscated"] is False
