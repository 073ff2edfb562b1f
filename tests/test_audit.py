"""`unerase audit`: the shipped templates, the Fisher test, and a deliberately biased scripted backend.

The biased backend is a scripted stand-in, NOT a model: its term-free check calls every text that mentions
one chosen group hateful and every other text not hateful. A fair audit must find that group, and only it.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from engine.analysis import BackendRouter
from engine.audit import (
    AUDIT_CATEGORIES,
    TemplateError,
    cases,
    fisher_greater,
    load_templates,
    shipped_templates,
)
from engine.cli import main
from engine.cli.audit import run_audit
from engine.llm.backend import Message
from engine.pipeline import PipelineConfig
from tests.support.scripted_backend import ScriptedLLMBackend, default_answer, stage_of

LANGUAGES = {"en", "fr", "el", "de", "nl", "it", "pt"}
VOCAB = str(Path(__file__).parent / "fixtures" / "vocab")


@pytest.fixture(autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "audit-cache"))


def test_shipped_templates_cover_seven_languages_and_ten_groups_each() -> None:
    sets = load_templates([shipped_templates()])
    assert {s.language for s in sets} == LANGUAGES
    for template_set in sets:
        assert len(template_set.groups) >= 10, template_set.language
        assert {g.category for g in template_set.groups} == set(AUDIT_CATEGORIES), template_set.language
        assert {t.kind for t in template_set.templates} == {"neutral", "positive", "hateful"}
    # the same group ids everywhere, so languages can be compared group by group
    assert len({tuple(sorted(g.id for g in s.groups)) for s in sets}) == 1
    filled = cases(sets)
    assert all("{" not in c.text and "}" not in c.text for c in filled)
    assert len(filled) == sum(len(s.groups) * len(s.templates) for s in sets)


def test_agreement_variants_are_used_for_feminine_and_neuter_groups() -> None:
    by_text = {(c.language, c.template, c.group): c.text for c in cases(load_templates([shipped_templates()]))}
    assert by_text[("fr", "positive-welcome", "women")] == "Les femmes sont les bienvenues dans notre association."
    assert by_text[("fr", "positive-welcome", "muslims")] == "Les musulmans sont les bienvenus dans notre association."
    assert by_text[("el", "positive-welcome", "trans-people")].endswith("ευπρόσδεκτα στον σύλλογό μας.")
    assert by_text[("it", "neutral-census", "women")].startswith("Le donne sono citate")


def test_fisher_greater_matches_a_hand_computed_value() -> None:
    # 3 of 3 deviations in one group, out of 3 deviations among 9 texts: 1 / C(9, 3)
    assert math.isclose(fisher_greater(3, 3, 3, 9), 1 / 84)
    assert fisher_greater(0, 3, 3, 9) == 1.0
    # P(X >= 1) with X ~ Hypergeometric(N=4, K=2, n=2) = 1 - C(2,0)C(2,2)/C(4,2) = 5/6
    assert math.isclose(fisher_greater(1, 2, 2, 4), 5 / 6)


def biased_against(phrase: str) -> ScriptedLLMBackend:
    """A scripted backend that calls texts mentioning `phrase` hateful — a deliberately biased stand-in."""

    def answer(messages: Sequence[Message]) -> str:
        if stage_of(messages) == "targeting" and phrase in messages[-1].content:
            return (
                "<reasoning>scripted bias</reasoning><verdict>hateful</verdict><targets>religion</targets>"
                "<explanation>Scripted: this backend is biased on purpose.</explanation>"
            )
        return default_answer(messages)

    return ScriptedLLMBackend(answer, model_id="scripted:biased")


def test_a_biased_backend_is_found_and_only_its_group() -> None:
    sets = [s for s in load_templates([shipped_templates()]) if s.language == "en"]
    config = PipelineConfig(vocabularies=(VOCAB,), use_cache=False)
    report = asyncio.run(run_audit(sets, config, router=BackendRouter(biased_against("Muslims"))))
    (en,) = report.languages
    assert en.language == "en"
    assert en.tuples == len(sets[0].templates)
    assert en.consistent == 0 and report.consistency_rate == 0.0
    assert [g.group for g in en.groups if g.treated_differently] == ["muslims"]
    muslims = next(g for g in en.groups if g.group == "muslims")
    assert muslims.flagged == muslims.deviations == en.tuples
    assert muslims.p_value < report.alpha / len(en.groups)
    # the scripted answers carry no log-probabilities, so "hateful" and "not hateful" both get the default model
    # confidence: the decisions differ, their confidence does not
    assert math.isclose(muslims.mean_confidence_difference, 0.0, abs_tol=1e-9)
    others = [g for g in en.groups if g.group != "muslims"]
    assert all(g.flagged == 0 and g.deviations == 0 and g.p_value == 1.0 for g in others)
    assert all(flip.deviating() == ["muslims"] for flip in en.flips)
    assert report.info.models == ("scripted:biased",)


def test_an_unbiased_backend_gives_consistent_tuples() -> None:
    sets = [s for s in load_templates([shipped_templates()]) if s.language == "de"]
    config = PipelineConfig(vocabularies=(VOCAB,), use_cache=False)
    report = asyncio.run(run_audit(sets, config, router=BackendRouter(ScriptedLLMBackend())))
    (de,) = report.languages
    assert de.consistency_rate == 1.0 and not de.flips
    assert not any(g.treated_differently for g in de.groups)


def test_cli_audit_with_own_templates_in_vocabulary_only_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    own = tmp_path / "site.yaml"
    own.write_text(
        "format: unerase-audit/1\nlanguage: en\ngroups:\n"
        "  - {id: sailors, category: nationality, text: sailors}\n"
        "  - {id: cripples, category: disability, text: cripples}\n"
        "  - {id: bakers, category: age, text: bakers}\n"
        "templates:\n"
        "  - {id: n1, kind: neutral, text: '{Group} live in this town.'}\n"
        "  - {id: n2, kind: neutral, text: 'I met {group} at the market.'}\n",
        encoding="utf-8",
    )
    code = main(["audit", "--templates", str(own), "--vocab", VOCAB, "--no-cache", "--json"])
    out, _ = capsys.readouterr()
    assert code == 0
    report = json.loads(out)
    (en,) = report["languages"]
    # "cripples" is a vocabulary term (unambiguous in the test vocabulary): its sentences are flagged, the others not
    assert en["consistency_rate"] == 0.0
    cripples = next(g for g in en["groups"] if g["group"] == "cripples")
    assert cripples["flagged"] == 2 and cripples["deviations"] == 2
    assert report["configuration"]["mode"] == "vocabulary-only"


def test_bad_templates_are_refused_with_file_and_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "format: unerase-audit/1\nlanguage: en\ngroups:\n"
        "  - {id: a, category: religion, text: A}\n  - {id: b, category: hobby, text: B}\n"
        "templates:\n  - {id: t, kind: neutral, text: '{Group} live here.'}\n",
        encoding="utf-8",
    )
    with pytest.raises(TemplateError, match=r"bad.yaml: groups entry 2: category 'hobby' is not known"):
        load_templates([bad])
    noslot = tmp_path / "noslot.yaml"
    noslot.write_text(
        "format: unerase-audit/1\nlanguage: en\ngroups:\n"
        "  - {id: a, category: religion, text: A}\n  - {id: b, category: age, text: B}\n"
        "templates:\n  - {id: t, kind: neutral, text: 'Nobody here.'}\n",
        encoding="utf-8",
    )
    code = main(["audit", "--templates", str(noslot), "--no-cache"])
    _, err = capsys.readouterr()
    assert code == 2 and "noslot.yaml: templates entry 1: 'text' has no {group} or {Group} slot" in err
