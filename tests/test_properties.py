"""Property-based tests of the matcher (hypothesis).

Random texts are built from neutral filler words with vocabulary terms inserted (inflected,
capitalized, obfuscated, inside German and Dutch compounds). Properties: every inserted term is
found at its exact span, `text[start:end] == surface`, hits never overlap, and inserting
whitespace or punctuation elsewhere changes nothing but the offsets.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.detector import Detector

FILLERS = {
    "en": "the people said that weather today was nice and we went home after dinner with friends on monday".split(),
    "de": "heute gehen wir mit den Kindern in den Garten und essen danach gemeinsam zu Abend".split(),
    "nl": "vandaag gaan we met de kinderen naar de tuin en daarna eten we samen".split(),
}

# (form as inserted, issue it must be found as, obfuscated?)
INSERTIONS = {
    "en": [
        ("cripples", "en-cripple", False),
        ("crippled", "en-cripple", False),
        ("CRIPPLE", "en-cripple", False),
        ("Faggots", "en-faggot", False),
        ("welfare queens", "en-welfare-queen", False),
        ("Welfare Queen", "en-welfare-queen", False),
        ("half-caste", "en-half-caste", False),
        ("Junkies", "en-junkie", False),
        ("f4gg0ts", "en-faggot", True),
        ("f.a.g", "en-faggot", True),
        ("f-a-g-s", "en-faggot", True),
        ("j*nkie", "en-junkie", True),
        ("sp@zz", "en-spaz", True),
        ("cr1ppl3", "en-cripple", True),
        ("faaaggot", "en-faggot", True),
        ("n1g", "en-nig", True),
    ],
    "de": [
        ("Zigeuner", "de-zigeuner", False),
        ("Zigeunerin", "de-zigeuner", False),
        ("Schwuchteln", "de-schwul-slur", False),
        ("Zigeunerschnitzel", "de-zigeuner", False),  # compound: the hit is the first 8 chars
        ("Schwuchtelparade", "de-schwul-slur", False),
        ("Mohrenapotheke", "de-mohr", False),
    ],
    "nl": [
        ("zigeuners", "nl-zigeuner", False),
        ("zigeunermuziek", "nl-zigeuner", False),
        ("Zigeunerkamp", "nl-zigeuner", False),
    ],
}
COMPOUND_PARTS = {
    "Zigeunerschnitzel": 8,
    "Schwuchtelparade": 10,
    "Mohrenapotheke": 6,
    "zigeunermuziek": 8,
    "Zigeunerkamp": 8,
}
PUNCTUATION = [" ", "  ", "\n", "\t", ", ", ". ", "; ", " (", ") ", ' "', "? ", ": ", "\r\n"]


@dataclass(frozen=True)
class Built:
    text: str
    expected: list[tuple[int, int, str, bool]]  # start, end, issue, obfuscated
    gaps: list[int]  # offsets of separators not touching an inserted term


@st.composite
def texts(draw: st.DrawFn, language: str) -> Built:
    parts = draw(
        st.lists(
            st.one_of(
                st.sampled_from(FILLERS[language]).map(lambda w: ("w", w)),
                st.sampled_from(INSERTIONS[language]).map(lambda i: ("t", i)),
            ),
            min_size=1,
            max_size=25,
        )
    )
    text = ""
    expected: list[tuple[int, int, str, bool]] = []
    gaps: list[int] = []
    previous_is_term = False
    for kind, value in parts:
        is_term = kind == "t"
        if text:
            if not is_term and not previous_is_term:
                gaps.append(len(text))
            text += " "
        if is_term:
            form, issue, obfuscated = value  # type: ignore[misc]
            length = COMPOUND_PARTS.get(form, len(form))
            expected.append((len(text), len(text) + length, issue, obfuscated))
            text += form
        else:
            text += value  # type: ignore[operator]
        previous_is_term = is_term
    return Built(text, expected, gaps)


def observed(detector: Detector, text: str, language: str) -> list[tuple[int, int, str, bool]]:
    hits = detector.detect(text, language).hits
    for hit in hits:
        assert text[hit.start : hit.end] == hit.surface
    for a, b in itertools.pairwise(hits):
        assert a.end <= b.start, f"overlapping hits {a.surface!r} and {b.surface!r}"
    return [(h.start, h.end, h.issue.id, h.obfuscated) for h in hits]


def check(detector: Detector, built: Built, language: str, data: st.DataObject) -> None:
    assert observed(detector, built.text, language) == built.expected
    if not built.gaps:
        return
    # insert whitespace or punctuation at some separator that does not touch an inserted term
    where = data.draw(st.sampled_from(built.gaps))
    extra = data.draw(st.sampled_from(PUNCTUATION))
    text = built.text[:where] + extra + built.text[where:]
    shift = len(extra)
    moved = [(s + shift if s >= where else s, e + shift if s >= where else e, i, o) for s, e, i, o in built.expected]
    assert observed(detector, text, language) == moved


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(data=st.data())
def test_english_insertions_are_found_exactly(detector: Detector, data: st.DataObject) -> None:
    check(detector, data.draw(texts("en")), "en", data)


@SETTINGS
@given(data=st.data())
def test_german_insertions_and_compounds(detector: Detector, data: st.DataObject) -> None:
    check(detector, data.draw(texts("de")), "de", data)


@SETTINGS
@given(data=st.data())
def test_dutch_insertions_and_compounds(detector: Detector, data: st.DataObject) -> None:
    check(detector, data.draw(texts("nl")), "nl", data)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_any_text_gives_exact_non_overlapping_hits(detector: Detector, text: str) -> None:
    if not text.strip():
        return
    observed(detector, text, "en")
