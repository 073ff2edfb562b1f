"""Bad input gets a clear error or an exact result; nothing crashes."""

from __future__ import annotations

import pytest

from engine.detector import Detector
from engine.errors import InvalidText, LanguageNotDetected, UnsupportedLanguage


@pytest.mark.parametrize("text", ["", "   ", "\n\t \r\n", "\u200b\u200b"])
def test_empty_or_whitespace_text_is_refused_clearly(detector: Detector, text: str) -> None:
    if text.strip():  # zero-width characters are not whitespace for str.strip; they carry no word
        assert detector.detect(text, "en").hits == ()
        return
    with pytest.raises(InvalidText, match="empty or only whitespace; give at least one word"):
        detector.detect(text, "en")


def test_one_megabyte_of_text(detector: Detector) -> None:
    sentence = "The strike crippled the port, and a troll wrote f.a.g under the post. "
    text = sentence * (1_000_000 // len(sentence) + 1)
    result = detector.detect(text, "en")
    assert len(text) > 1_000_000
    per_sentence = [(h.surface, h.obfuscated) for h in result.hits[:2]]
    assert per_sentence == [("crippled", False), ("f.a.g", True)]
    assert len(result.hits) == 2 * text.count("The strike")
    assert all(text[h.start : h.end] == h.surface for h in result.hits)


def test_lone_surrogates_are_replaced_one_for_one(detector: Detector) -> None:
    text = "a cripple \ud800 and \udfff f@g"
    result = detector.detect(text, "en")
    assert [h.surface for h in result.hits] == ["cripple", "f@g"]
    assert [(h.start, h.end) for h in result.hits] == [(2, 9), (18, 21)]  # offsets of the original
    assert result.warnings and "2 lone surrogate" in result.warnings[0]
    assert result.text.encode("utf-8")  # the cleaned text can be encoded


def test_nul_bytes_and_control_characters(detector: Detector) -> None:
    text = "cripple\x00faggot\x01\x02 junkie\x7f"
    assert [h.surface for h in detector.detect(text, "en").hits] == ["cripple", "faggot", "junkie"]


def test_mixed_scripts_and_right_to_left_text(detector: Detector) -> None:
    text = "مرحبا cripple שלום \u202eeikcuj\u202c γύφτος junkie"
    result = detector.detect(text, "en")
    assert [(h.surface, text[h.start : h.end]) for h in result.hits] == [("cripple", "cripple"), ("junkie", "junkie")]


def test_unknown_language_lists_the_supported_ones(detector: Detector) -> None:
    with pytest.raises(UnsupportedLanguage) as error:
        detector.detect("some text", "xx")
    assert "language 'xx' is not supported" in error.value.message
    assert "supported: de, el, en, it, nl" in error.value.message
    assert error.value.status == 422


def test_language_detection_reports_confidence_and_refuses_politely(detector: Detector) -> None:
    result = detector.detect("Die Kinder spielen mit dem Zigeunerschnitzel im Garten und lachen.")
    assert result.language == "de" and result.language_detected and 0.5 < result.language_confidence <= 1
    assert [h.surface for h in result.hits] == ["Zigeuner"]
    greek = detector.detect("Οι γύφτοι έφυγαν από το χωριό χθες το βράδυ.")
    assert greek.language == "el"
    with pytest.raises(LanguageNotDetected) as error:
        detector.detect("xqzt vvrk 12345 ###")
    assert "give the language explicitly, one of: de, el, en, it, nl" in error.value.message


def test_non_string_input_is_refused(detector: Detector) -> None:
    with pytest.raises(InvalidText, match="text must be a string, got bytes"):
        detector.detect(b"bytes", "en")  # type: ignore[arg-type]
