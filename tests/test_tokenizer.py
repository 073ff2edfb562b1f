from __future__ import annotations

import pytest

from engine.text.normalize import fold, fold_with_offsets
from engine.text.tokenizer import RegexTokenizer

tokenize = RegexTokenizer().tokenize


def spans(text: str) -> list[str]:
    tokens = list(tokenize(text))
    for token in tokens:
        assert text[token.start : token.end] == token.text
    return [t.text for t in tokens]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hello, world!", ["Hello", "world"]),
        ("l'arabe d’origine", ["l", "arabe", "d", "origine"]),
        ("emoji 🙂 between 👍🏽 words", ["emoji", "between", "words"]),
        ("cafe\u0301 au lait", ["cafe\u0301", "au", "lait"]),  # decomposed é stays in the word
        ("Οι γύφτοι και ο πούστης.", ["Οι", "γύφτοι", "και", "ο", "πούστης"]),
        ("line one\r\nline two", ["line", "one", "line", "two"]),
        ("n\u200bi\u200bg here\u200b", ["n\u200bi\u200bg", "here"]),  # zero-width inside, not at the edge
        ("שלום world مرحبا", ["שלום", "world", "مرحبا"]),
        ("", []),
        ("   \t\n", []),
    ],
)
def test_tokens_have_exact_offsets(text: str, expected: list[str]) -> None:
    assert spans(text) == expected


def test_fold_is_case_and_accent_insensitive_except_german() -> None:
    assert fold("Πούστης", "el") == fold("ΠΟΥΣΤΗΣ", "el") == "πουστησ"  # final sigma folds too
    assert fold("Pédé", "fr") == "pede"
    assert fold("schwül", "de") != fold("schwul", "de")
    assert fold("STRASSE", "de") == fold("Straße", "de")
    assert fold("n\u200bi\u00adg", "en") == "nig"


def test_fold_with_offsets_maps_back_to_source() -> None:
    folded, index = fold_with_offsets("Straße", "de")
    assert folded == "strasse"
    assert [index[i] for i in range(len(folded))] == [0, 1, 2, 3, 4, 4, 5]
