"""Orchestration of one analysis (engine/analysis.py) with a scripted backend (not a model)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import MemoryCache, SQLiteCache
from engine.detector import Detector
from engine.events import Decision, Done, ErrorEvent, Explanation, HitFound, Targeting, Verdict
from engine.llm.backend import Message

from .support.events import by_type, check_order, types
from .support.scripted_backend import ScriptedLLMBackend, default_answer, stage_of

AMBIGUOUS_TWICE = "You cripple. Yes, you cripple, and a faggot too."  # 'cripple' is ambiguous, twice


def analyzer(detector: Detector, backend: ScriptedLLMBackend | None, **config: object) -> Analyzer:
    return Analyzer(detector, BackendRouter(backend), cache=MemoryCache(), config=AnalyzerConfig(**config))  # type: ignore[arg-type]


async def test_vocabulary_only_mode(detector: Detector) -> None:
    events = await analyzer(detector, None).collect("a faggot and a junkie", "en")
    check_order(events)
    assert events[0].mode == "vocabulary-only" and events[0].to_dict()["models"] == ["none"]  # type: ignore[union-attr]
    verdicts = by_type(events, Verdict)
    assert [(v.status, v.decided_by) for v in verdicts] == [("contentious", "vocabulary")] * 2
    (decision,) = by_type(events, Decision)
    assert decision.label == "flagged" and set(decision.categories) == {"sexual-orientation", "addiction"}
    (explanation,) = by_type(events, Explanation)
    assert "“faggot” targets people because of their sexual orientation" in explanation.text
    assert explanation.faithfulness == "faithful" and explanation.cited_hits == ("h1", "h2")
    assert events[-1].llm_calls == 0  # type: ignore[union-attr]
    assert types(events) == [
        "analysis",
        "hit",
        "hit",
        "verdict",
        "verdict",
        "targeting",
        "explanation",
        "decision",
        "done",
    ]
    (targeting,) = by_type(events, Targeting)
    assert targeting.status == "skipped" and "no language model" in targeting.reason


async def test_vocabulary_only_ambiguous_and_clean_texts(detector: Detector) -> None:
    unsure = await analyzer(detector, None).collect("he is crippled", "en")
    (verdict,) = by_type(unsure, Verdict)
    assert verdict.status == "undetermined" and "no language model" in verdict.reason
    assert by_type(unsure, Decision)[0].label == "needs_review"
    cue = await analyzer(detector, None).collect("the strike left the port a cripple for weeks", "en")
    assert [(v.status, v.decided_by) for v in by_type(cue, Verdict)] == [("neutral", "sense-cues")]
    clean = await analyzer(detector, None).collect("a perfectly friendly sentence", "en")
    (decision,) = by_type(clean, Decision)
    assert decision.label == "not_flagged" and decision.severity == "none"
    assert "vocabulary-only mode" in decision.reasons[0]
    assert [t.status for t in by_type(clean, Targeting)] == ["skipped"]


async def test_fast_mode_sends_only_ambiguous_hits_and_dedupes(detector: Detector) -> None:
    backend = ScriptedLLMBackend()
    events = await analyzer(detector, backend).collect(AMBIGUOUS_TWICE, "en")
    check_order(events)
    # two 'cripple' hits make one question; its answer and the vocabulary's are then merged
    assert sorted(backend.stages) == ["disambiguation", "fusion", "targeting"]
    verdicts = {v.hit_id: v for v in by_type(events, Verdict)}
    assert [verdicts[h].decided_by for h in ("h1", "h2", "h3")] == ["scripted:test", "scripted:test", "vocabulary"]
    assert by_type(events, Decision)[0].label == "flagged"
    assert events[-1].llm_calls == 3  # type: ignore[union-attr]


async def test_thorough_mode_sends_every_hit(detector: Detector) -> None:
    backend = ScriptedLLMBackend()
    await analyzer(detector, backend).collect(AMBIGUOUS_TWICE, "en", mode="thorough")
    # the two explanations are identical, so there is nothing to merge and no fusion call
    assert sorted(backend.stages) == ["disambiguation", "disambiguation", "targeting"]


async def test_first_hit_arrives_before_any_model_call_completes(detector: Detector) -> None:
    backend = ScriptedLLMBackend(delay=0.3)
    stream = analyzer(detector, backend).analyze(AMBIGUOUS_TWICE, "en")
    seen = []
    async for event in stream:
        seen.append(event)
        if isinstance(event, HitFound):
            assert backend.finished == 0
    assert backend.finished == 3 and types(seen)[-1] == "done"


async def test_calls_run_concurrently_within_the_bound(detector: Detector) -> None:
    backend = ScriptedLLMBackend(delay=0.05)
    text = "cripple, crippled, a cripple, such cripples"
    await analyzer(detector, backend, concurrency=2).collect(text, "en", mode="thorough")
    assert backend.max_running == 2
    backend = ScriptedLLMBackend(delay=0.05)
    await analyzer(detector, backend, concurrency=8).collect(text, "en", mode="thorough")
    assert backend.max_running == backend.started == 4  # three questions and the targeting, all at once


async def test_second_analysis_makes_no_model_call(detector: Detector, tmp_path) -> None:  # type: ignore[no-untyped-def]
    backend = ScriptedLLMBackend()
    cache = SQLiteCache(tmp_path / "cache.sqlite")
    first = Analyzer(detector, BackendRouter(backend), cache=cache)
    events = await first.collect(AMBIGUOUS_TWICE, "en", mode="thorough")
    calls = backend.started
    assert calls == 3 and events[-1].cached is False  # type: ignore[union-attr]
    again = Analyzer(detector, BackendRouter(backend), cache=SQLiteCache(tmp_path / "cache.sqlite"))
    events = await again.collect(AMBIGUOUS_TWICE, "en", mode="thorough")
    assert backend.started == calls
    assert events[-1].cached is True and events[-1].llm_calls == 0  # type: ignore[union-attr]
    assert {v.decided_by for v in by_type(events, Verdict)} == {"cache"}


async def test_closing_the_consumer_cancels_every_pending_call(detector: Detector) -> None:
    backend = ScriptedLLMBackend(delay=5)
    stream = analyzer(detector, backend).analyze("cripple crippled cripples, a cripple", "en", mode="thorough")
    async for event in stream:
        if isinstance(event, HitFound):
            break
    await asyncio.sleep(0.05)  # let every call start
    started = backend.started
    await stream.aclose()
    await asyncio.sleep(0)
    assert started == 4 and backend.cancelled == started and backend.finished == 0


async def test_unavailable_model_gives_errors_and_an_honest_decision(detector: Detector) -> None:
    backend = ScriptedLLMBackend(fail="connection refused by 127.0.0.1:9")
    events = await analyzer(detector, backend).collect("he is crippled", "en")
    check_order(events)
    errors = by_type(events, ErrorEvent)
    assert {e.stage for e in errors} == {"disambiguation", "targeting"}
    assert all(e.code == "llm-unavailable" for e in errors)
    assert by_type(events, Verdict)[0].status == "undetermined"
    assert by_type(events, Targeting)[0].status == "undetermined"
    decision = by_type(events, Decision)[0]
    assert decision.label == "needs_review"
    flagged = await analyzer(detector, backend).collect("what a faggot", "en")
    assert by_type(flagged, Decision)[0].label == "flagged"  # the vocabulary already flags it


async def test_timeouts_are_undetermined_and_the_stream_still_ends(detector: Detector) -> None:
    backend = ScriptedLLMBackend(delay=2)
    events = await analyzer(detector, backend, timeout=0.05).collect("he is crippled", "en")
    check_order(events)
    assert {e.code for e in by_type(events, ErrorEvent)} == {"llm-timeout"}
    assert by_type(events, Decision)[0].label == "needs_review"


async def test_malformed_answers_never_clear_a_text(detector: Detector) -> None:
    backend = ScriptedLLMBackend(answer=lambda m: "Sure! The text is fine, not hateful at all.")
    events = await analyzer(detector, backend).collect("a perfectly friendly sentence", "en")
    (targeting,) = by_type(events, Targeting)
    assert targeting.status == "undetermined" and "none of the expected tags" in targeting.reason
    assert by_type(events, Decision)[0].label == "needs_review"


async def test_term_free_attack_flags_with_quotes(detector: Detector) -> None:
    def answer(messages: Sequence[Message]) -> str:
        if stage_of(messages) == "targeting":
            return (
                "<reasoning>A religion is generalised.</reasoning><verdict>hateful</verdict><targets>religion</targets>"
                '<explanation>It claims that "every believer is a terrorist", blaming a whole religion.</explanation>'
            )
        return default_answer(messages)

    events = await analyzer(detector, ScriptedLLMBackend(answer)).collect(
        "They say every believer is a terrorist.", "en"
    )
    (targeting,) = by_type(events, Targeting)
    assert targeting.status == "hateful" and targeting.characteristics == ("religion",)
    assert [(q.text, q.start, q.end) for q in targeting.quotes] == [("every believer is a terrorist", 9, 38)]
    decision = by_type(events, Decision)[0]
    assert decision.label == "flagged" and decision.categories == ("religion",)
    (explanation,) = by_type(events, Explanation)
    assert explanation.faithfulness == "faithful" and explanation.decided_by == "scripted:test"


async def test_unfaithful_fusion_is_replaced_by_the_grounded_explanation(detector: Detector) -> None:
    def answer(messages: Sequence[Message]) -> str:
        if stage_of(messages) == "fusion":
            return '<explanation>The author wrote "all of them are junkies" and called someone a spaz.</explanation>'
        if stage_of(messages) == "disambiguation":
            word = "cripple" if '"cripple"' in messages[-1].content else "faggot"
            return (
                f"<reasoning>-</reasoning><verdict>contentious</verdict>"
                f"<explanation>Calling someone {word} here insults a group of people.</explanation>"
            )
        return default_answer(messages)

    events = await analyzer(detector, ScriptedLLMBackend(answer)).collect("cripple, you faggot", "en", mode="thorough")
    (explanation,) = by_type(events, Explanation)
    assert explanation.faithfulness == "repaired" and explanation.decided_by == "vocabulary"
    assert any("'all of them are junkies', which is not in the text" in p for p in explanation.problems)
    assert any("names the term 'spaz'" in p for p in explanation.problems)
    assert "“faggot” targets people" in explanation.text


async def test_invalid_mode_and_empty_text_raise_before_any_event(detector: Detector) -> None:
    from engine.errors import InvalidText, UneraseError

    with pytest.raises(UneraseError, match="mode 'quick' is not known; accepted: fast, thorough"):
        await analyzer(detector, None).collect("text", "en", mode="quick")
    with pytest.raises(InvalidText):
        await analyzer(detector, None).collect("  ", "en")


def test_done_payload(detector: Detector) -> None:
    events = asyncio.run(analyzer(detector, None).collect("a junkie", "en"))
    done = events[-1]
    assert isinstance(done, Done) and set(done.to_dict()) == {"elapsed_ms", "cached", "llm_calls"}


async def test_sense_cues_read_eight_words_on_each_side_however_long_they_are(detector: Detector) -> None:
    long_words = " ".join(["Verkehrsinfrastrukturfinanzierungsgesetzgebung"] * 6)  # 46 letters each
    near = await analyzer(detector, None).collect(f"the port {long_words} a cripple", "en")
    assert [v.decided_by for v in by_type(near, Verdict)] == ["sense-cues"]  # "port" is the 8th word back
    far = await analyzer(detector, None).collect(f"the port {long_words} x a cripple", "en")
    assert [v.status for v in by_type(far, Verdict)] == ["undetermined"]  # now the 9th: outside the window


async def test_the_fallback_explanation_says_why_no_model_checked_the_text(detector: Detector) -> None:
    # no model configured: the explanation says there is none
    (alone,) = by_type(await analyzer(detector, None).collect("a perfectly friendly sentence", "en"), Explanation)
    assert "without a language model" in alone.text and "could not decide" not in alone.text
    # a model configured but failing (scripted backend, not a model): the explanation must not claim there is none
    failing = ScriptedLLMBackend(fail="connection refused by 127.0.0.1:9")
    (failed,) = by_type(await analyzer(detector, failing).collect("a perfectly friendly sentence", "en"), Explanation)
    assert "language model" not in failed.text
    assert "The automatic check could not decide" in failed.text and "comes from the vocabulary" in failed.text
    # the same with a term the model was asked about: the vocabulary explanation follows the note
    (term,) = by_type(await analyzer(detector, failing).collect("he is crippled", "en"), Explanation)
    assert term.text.startswith("The automatic check could not decide; this explanation comes from the vocabulary.")
    assert "“crippled”" in term.text and term.decided_by == "vocabulary"


async def test_an_undecided_model_gets_the_same_honest_fallback_in_other_languages_too(detector: Detector) -> None:
    # an answer without the expected tags: the model was asked and could not decide
    backend = ScriptedLLMBackend(answer=lambda m: "Sure! The text is fine, not hateful at all.")
    texts = {
        "de": "ein ganz freundlicher Satz",
        "el": "μια εντελώς φιλική πρόταση",
    }
    for lang, text in texts.items():
        (explanation,) = by_type(await analyzer(detector, backend).collect(text, lang), Explanation)
        wanted = analyzer(detector, backend).prompts.vocabulary_templates(lang)["none_undecided"]
        assert explanation.text == wanted, lang
