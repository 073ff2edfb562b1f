"""Model answers are read without ever failing open (engine/parsing.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.llm.backend import Completion
from engine.parsing import parse_disambiguation, parse_fusion, parse_targeting
from engine.vocabulary.model import CATEGORIES

VALID_TARGETING = (
    "<reasoning>Nobody is attacked for who they are.</reasoning>\n<verdict>not_hateful</verdict>\n"
    "<targets>none</targets>\n<explanation>The text criticises a decision, not a group of people.</explanation>"
)
VALID_DISAMBIGUATION = (
    "<reasoning>The verb sense is used.</reasoning>\n<verdict>neutral</verdict>\n"
    "<explanation>Here the word describes damage to a port, not a person.</explanation>"
)
REAL_OUTPUTS = Path(__file__).resolve().parent / "fixtures" / "smollm2-outputs.json"


def targeting(text: str, finish: str = "stop", lang: str = "en") -> str:
    return parse_targeting(Completion(text, "m", finish), lang, CATEGORIES).status


def test_valid_answers_parse() -> None:
    parsed = parse_targeting(Completion(VALID_TARGETING, "m", "stop"), "en", CATEGORIES)
    assert (parsed.status, parsed.field("targets")) == ("not_hateful", "")
    assert parse_disambiguation(Completion(VALID_DISAMBIGUATION, "m", "stop"), "en").status == "neutral"
    fenced = "```xml\n" + VALID_DISAMBIGUATION + "\n```"
    assert parse_disambiguation(Completion(fenced, "m", "stop"), "en").status == "neutral"
    hateful = VALID_TARGETING.replace("not_hateful", "hateful").replace("none", "religion, ethnicity")
    parsed = parse_targeting(Completion(hateful, "m", "stop"), "en", CATEGORIES)
    assert (parsed.status, parsed.field("targets")) == ("hateful", "religion,ethnicity")
    assert parse_fusion(Completion("<explanation>One paragraph.</explanation>", "m", "stop"), "en").status == "ok"


@pytest.mark.parametrize(
    ("answer", "finish", "reason"),
    [
        ("", "stop", "empty answer"),
        ("   \n", "stop", "empty answer"),
        ("The text is not hateful.", "stop", "none of the expected tags"),
        (
            VALID_TARGETING.replace("<verdict>", "<decision>").replace("</verdict>", "</decision>"),
            "stop",
            "unknown tag <decision>",
        ),
        (VALID_TARGETING.replace("</verdict>", ""), "stop", "never closed"),
        (VALID_TARGETING[:-20], "length", "never closed"),
        (VALID_TARGETING, "length", "cut off at the token limit"),
        ("Sure! " + VALID_TARGETING, "stop", "text outside the tags"),
        (VALID_TARGETING + "\nHope this helps.", "stop", "text outside the tags"),
        (VALID_TARGETING + "<verdict>hateful</verdict>", "stop", "appears more than once"),
        (VALID_TARGETING.replace("not_hateful", "probably fine"), "stop", "unknown verdict"),
        (VALID_TARGETING.replace("<targets>none", "<targets>nationality"), "stop", "unknown characteristic"),
        (VALID_TARGETING.replace("<targets>none", "<targets>race"), "stop", "but characteristics named"),
        (VALID_TARGETING.replace("not_hateful", "hateful"), "stop", "without a targeted characteristic"),
        (VALID_TARGETING.replace("The text criticises a decision, not a group of people.", ""), "stop", "is empty"),
    ],
)
def test_malformed_answers_are_undetermined_with_a_reason(answer: str, finish: str, reason: str) -> None:
    parsed = parse_targeting(Completion(answer, "m", finish), "en", CATEGORIES)
    assert parsed.status == "undetermined"
    assert reason in parsed.reason


def test_wrong_language_is_undetermined() -> None:
    answer = VALID_TARGETING.replace(
        "The text criticises a decision, not a group of people.",
        "The text only criticises a decision of the city council and does not attack any group.",
    )
    parsed = parse_targeting(Completion(answer, "m", "stop"), "fr", CATEGORIES)
    assert parsed.status == "undetermined" and "written in 'en', expected 'fr'" in parsed.reason
    french = answer.replace(
        "The text only criticises a decision of the city council and does not attack any group.",
        "Le texte critique seulement une décision du conseil municipal et n'attaque aucun groupe.",
    )
    assert targeting(french, lang="fr") == "not_hateful"


def test_logprobs_give_the_verdict_confidence() -> None:
    tokens = [("<verdict>", -0.01), ("neut", -0.2231), ("ral", -0.01), ("</verdict>", 0.0)]
    text = "<verdict>neutral</verdict><explanation>A port, not a person here.</explanation>"
    parsed = parse_disambiguation(Completion(text, "m", "stop", tuple(tokens)), "en")
    assert parsed.status == "neutral" and parsed.confidence == pytest.approx(0.8, abs=1e-3)


def _mutations(valid: str) -> st.SearchStrategy[str]:
    cut = st.integers(0, len(valid) - 1).map(lambda i: valid[:i])  # truncated anywhere
    tags = ["<verdict>", "</verdict>", "<explanation>", "</explanation>", "<targets>", "</targets>"]
    renamed = st.tuples(
        st.sampled_from(tags), st.sampled_from(["<answer>", "</answer>", "", "<verdict>", "<explanation>"])
    )
    rename = renamed.filter(lambda r: r[0] != r[1] and r[0] in valid).map(lambda r: valid.replace(r[0], r[1], 1))
    prose = st.text(min_size=1, max_size=30).filter(lambda t: t.strip() != "")
    around = st.tuples(prose, st.booleans()).map(lambda p: p[0] + valid if p[1] else valid + p[0])
    verdict = st.sampled_from(["not hateful!", "NOT_HATEFUL?", "no", "fine", "hateful/not_hateful", ""]).map(
        lambda w: valid.replace("<verdict>not_hateful</verdict>", f"<verdict>{w}</verdict>")
    )
    return st.one_of(cut, rename, around, verdict)


@settings(max_examples=3000, deadline=None)
@given(answer=_mutations(VALID_TARGETING), finish=st.sampled_from(["stop", "length", None]))
def test_malformed_targeting_never_says_not_hateful(answer: str, finish: str | None) -> None:
    assert parse_targeting(Completion(answer, "m", finish), "en", CATEGORIES).status in ("undetermined", "hateful")


@settings(max_examples=1000, deadline=None)
@given(answer=_mutations(VALID_DISAMBIGUATION.replace("neutral", "not_hateful", 1)))
def test_malformed_disambiguation_never_says_neutral(answer: str) -> None:
    answer = answer.replace("not_hateful", "neutral")
    parsed = parse_disambiguation(Completion(answer, "m", "stop"), "en")
    if answer.strip() != VALID_DISAMBIGUATION.strip():
        assert parsed.status in ("undetermined", "contentious")


@settings(max_examples=500, deadline=None)
@given(answer=st.text(max_size=300))
def test_random_text_never_crashes_or_clears(answer: str) -> None:
    assert targeting(answer) in ("undetermined", "hateful")


def test_real_outputs_of_the_small_model() -> None:
    """Answers SmolLM2-135M actually gave (collected by tests/test_llm_real.py): parsed without
    crashing; any answer that is not undetermined has every tag the parser requires."""
    if not REAL_OUTPUTS.exists():
        pytest.skip(f"{REAL_OUTPUTS.name} not collected yet")
    outputs = json.loads(REAL_OUTPUTS.read_text(encoding="utf-8"))
    assert len(outputs) >= 10
    for item in outputs:
        completion = Completion(item["text"], "smollm2", item.get("finish_reason"))
        if item["stage"] == "targeting":
            parsed = parse_targeting(completion, item["language"], CATEGORIES)
            required = ("<verdict>", "<targets>", "<explanation>")
        else:
            parsed = parse_disambiguation(completion, item["language"])
            required = ("<verdict>", "<explanation>")
        if parsed.status != "undetermined":
            assert all(tag in item["text"] for tag in required)
        else:
            assert parsed.reason
