"""The shipped prompts: every language has every stage, and each file uses exactly its placeholders."""

from __future__ import annotations

import string

import pytest

from engine.llm.backend import Completion
from engine.parsing import parse_disambiguation, parse_targeting
from engine.prompts import STAGES, Prompts

LANGUAGES = ("en", "fr", "el", "de", "nl", "it", "pt")
PLACEHOLDERS = {
    "disambiguation": {"text", "term", "surface", "description", "categories", "neutral_cues", "contentious_cues"},
    "targeting": {"text", "categories"},
    "fusion": {"text", "explanations"},
}
TEMPLATE_PLACEHOLDERS = {
    "hit": {"surface", "groups", "description"},
    "hit_ambiguous": {"surface", "groups", "description"},
    "alternatives": {"alternatives"},
    "suggestion": {"suggestion"},
    "and": set(),
    "none": set(),
    "none_undecided": set(),
    "undecided": set(),
}

PROMPTS = Prompts()


def fields(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def test_every_language_is_shipped() -> None:
    assert set(PROMPTS.languages) == set(LANGUAGES)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("stage", STAGES)
def test_prompt_uses_exactly_its_placeholders(language: str, stage: str) -> None:
    template = PROMPTS.template(stage, language)
    assert fields(template.user) == PLACEHOLDERS[stage]
    assert fields(template.system) == set(), "the system block is sent as is; it must not hold braces"
    messages = template.render(**{name: f"<{name}>" for name in PLACEHOLDERS[stage]})
    assert all(f"<{name}>" in messages[1].content for name in PLACEHOLDERS[stage])


@pytest.mark.parametrize("language", LANGUAGES)
def test_prompts_ask_for_the_english_tags_the_parser_reads(language: str) -> None:
    # The example answer a prompt shows the model must be one the parser accepts.
    disambiguation = PROMPTS.template("disambiguation", language).system
    targeting = PROMPTS.template("targeting", language).system
    for tag in ("<reasoning>", "<verdict>contentious</verdict>", "<verdict>neutral</verdict>", "<explanation>"):
        assert tag in disambiguation, (language, tag)
    for tag in ("<verdict>hateful</verdict>", "<verdict>not_hateful</verdict>", "<targets>", "<explanation>"):
        assert tag in targeting, (language, tag)
    answer = "<reasoning>r</reasoning>\n<verdict>neutral</verdict>\n<explanation>x</explanation>"
    assert parse_disambiguation(Completion(answer, "hand-written"), language).status == "neutral"
    answer = "<reasoning>r</reasoning><verdict>hateful</verdict><targets>religion</targets><explanation>x</explanation>"
    parsed = parse_targeting(Completion(answer, "hand-written"), language, ("religion", "race"))
    assert (parsed.status, parsed.field("targets")) == ("hateful", "religion")


@pytest.mark.parametrize("language", LANGUAGES)
def test_vocabulary_templates_match_the_english_ones(language: str) -> None:
    english = PROMPTS.vocabulary_templates("en")
    templates = PROMPTS.vocabulary_templates(language)
    assert set(templates) == set(english)
    assert set(templates["categories"]) == set(english["categories"])
    for key, allowed in TEMPLATE_PLACEHOLDERS.items():
        assert fields(str(templates[key])) <= allowed | {"term", "groups"}, (language, key)
        assert fields(str(templates[key])) == fields(str(english[key])), (language, key)


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize("stage", STAGES)
def test_instructions_come_before_the_text_so_servers_can_reuse_them(language: str, stage: str) -> None:
    # Everything the same for every call (role, steps, answer form) is in the system block, and the
    # user block opens with the text: a server's prompt cache then holds the instructions and only
    # the text and the hit are processed anew. Two calls about different texts share the whole system message.
    template = PROMPTS.template(stage, language)
    assert "<explanation>" in template.system and "<explanation>" not in template.user
    assert ("<verdict>" in template.system) == (stage != "fusion") and "<verdict>" not in template.user
    first = min(template.user.index("{" + name + "}") for name in PLACEHOLDERS[stage])
    assert template.user.index("{text}") == first
    values = {name: "a" for name in PLACEHOLDERS[stage]}
    one, two = template.render(**values), template.render(**{**values, "text": "another text"})
    assert one[0] == two[0] and one[1] != two[1]
