"""Which source decides each hit (engine/plan.py), and the analysis following that plan: the orders of sources
that no other test walks (thorough mode with precedents; a precedent source that passes on a disguised word).
The precedent sources here are scripted (they decide from a fixed table), the model backend is scripted too."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import MemoryCache
from engine.detector import Detector
from engine.events import Event, Verdict
from engine.hits import Hit
from engine.plan import LocalSources, plan
from engine.prompts import Prompts

from .support.scripted_backend import ScriptedLLMBackend

MIXED = "Snow crippled the rail network, you faggot"  # h1 ambiguous, h2 not


class ScriptedPrecedents:
    """A scripted precedent source (not a database): decides the hits whose surface it was given, counts calls."""

    def __init__(self, verdicts: dict[str, str]) -> None:
        self.verdicts = verdicts
        self.offered: list[list[str]] = []

    async def decide(self, hits: Sequence[Hit], text: str, language: str, site: str | None) -> dict[str, Verdict]:
        self.offered.append([h.surface for h in hits])
        return {
            h.id: Verdict(h.id, self.verdicts[h.surface], 0.8, "Earlier verdicts agree.", "precedent")
            for h in hits
            if h.surface in self.verdicts
        }


def verdicts_of(events: Sequence[Event]) -> dict[str, Verdict]:
    return {e.hit_id: e for e in events if isinstance(e, Verdict)}


@pytest.mark.parametrize(
    ("mode", "has_model", "has_precedents", "ambiguous_route", "plain_route"),
    [
        ("fast", True, True, ("precedents", "model"), ("vocabulary",)),
        ("fast", True, False, ("model",), ("vocabulary",)),
        ("fast", False, True, ("precedents", "disguise", "sense-cues"), ("vocabulary",)),
        ("fast", False, False, ("disguise", "sense-cues"), ("vocabulary",)),
        ("thorough", True, True, ("precedents", "model"), ("model",)),
        ("thorough", True, False, ("model",), ("model",)),
        ("thorough", False, False, ("disguise", "sense-cues"), ("vocabulary",)),  # no model: thorough changes nothing
    ],
)
def test_every_hit_gets_the_sources_that_can_decide_it_in_order(
    detector: Detector,
    mode: str,
    has_model: bool,
    has_precedents: bool,
    ambiguous_route: tuple[str, ...],
    plain_route: tuple[str, ...],
) -> None:
    hits = detector.detect(MIXED, "en").hits
    ambiguous, plain = hits
    assert ambiguous.ambiguous and not plain.ambiguous
    routes = plan(hits, mode=mode, has_model=has_model, has_precedents=has_precedents)
    assert (routes.route(ambiguous), routes.route(plain)) == (ambiguous_route, plain_route)
    # the hits grouped by where their route begins, in text order
    starts = {"precedents": routes.to_precedents, "model": routes.to_model}
    for hit in hits:
        first = routes.route(hit)[0]
        assert [g for g, group in starts.items() if hit in group] == ([first] if first in starts else [])
        assert (hit in routes.at_once) is (first in ("vocabulary", "disguise", "sense-cues"))
    if has_precedents:
        assert routes.after(ambiguous, "precedents") == ambiguous_route[1:]


def test_a_hit_no_source_decides_is_undetermined_never_neutral(detector: Detector) -> None:
    (hit,) = detector.detect("he is crippled", "en").hits  # no disguise, no sense cue around it
    local = LocalSources("he is crippled", detector.matcher("en"), Prompts(), has_model=False)
    verdict = local.decide(hit, ("disguise", "sense-cues"))
    assert (verdict.status, verdict.confidence, verdict.decided_by) == ("undetermined", 0.0, "vocabulary")
    assert verdict.reason == "an ambiguous term, and no language model is configured"
    with pytest.raises(ValueError, match="'model' is not a source decided at once; these are: vocabulary, disguise"):
        local.decide(hit, ("model",))


async def test_thorough_mode_asks_the_model_about_plain_hits_while_precedents_decide_ambiguous_ones(
    detector: Detector,
) -> None:
    backend = ScriptedLLMBackend()
    source = ScriptedPrecedents({"crippled": "neutral"})
    analyzer = Analyzer(
        detector, BackendRouter(backend), cache=MemoryCache(), config=AnalyzerConfig(), precedents=source
    )
    events = await analyzer.collect(MIXED, "en", mode="thorough")
    verdicts = verdicts_of(events)
    assert (verdicts["h1"].status, verdicts["h1"].decided_by) == ("neutral", "precedent")
    assert (verdicts["h2"].status, verdicts["h2"].decided_by) == ("contentious", "scripted:test")
    assert source.offered == [["crippled"]]  # only the ambiguous hit is offered to precedents
    assert sorted(backend.stages) == ["disambiguation", "targeting"]  # the plain hit and the text, not "crippled"
    kinds = [e.type for e in events]
    # the precedent verdict is out before the model's answers are waited for
    assert kinds[:4] == ["analysis", "hit", "hit", "verdict"] and events[3] == verdicts["h1"]


async def test_a_disguised_word_the_precedents_pass_on_is_decided_by_its_disguise(detector: Detector) -> None:
    source = ScriptedPrecedents({})  # knows nothing
    analyzer = Analyzer(detector, precedents=source)
    events = await analyzer.collect("a faggot and a cr1pple", "en")
    verdicts = verdicts_of(events)
    assert [(v.hit_id, v.status, v.decided_by) for v in verdicts.values()] == [
        ("h1", "contentious", "vocabulary"),
        ("h2", "contentious", "disguise"),
    ]
    assert source.offered == [["cr1pple"]]
    assert events[-1].llm_calls == 0  # type: ignore[union-attr]
