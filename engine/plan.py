"""Which source decides each hit of an analysis: verdict sources tried in order, ending in a fallback.

Every hit meets the same list of sources. Each one either gives the hit a verdict or passes (None); the first
verdict wins, and a hit that no source decides gets the fallback: *undetermined*, never neutral, because finding
no evidence that a word hurts is not evidence that it does not. In the order they are tried:

- `precedents`: earlier verdicts on similar contexts, from the analyzer's `PrecedentSource`; the web app chains
  moderators' precedents and the labelled sense examples compared by embeddings (web.services.verdict_sources).
  Asked once for all its hits, asynchronously; it passes on every hit it does not decide. Ambiguous hits only.
- `model`: the language model, for ambiguous hits (every hit in thorough mode). It never passes: a failed call
  or an unreadable answer is an undetermined verdict. Asynchronous, one call per term and spelling.
- `vocabulary`: a term that is not ambiguous is derogatory by itself. It never passes either.
- `disguise`: a disguised spelling (leetspeak, masks, separators) of an ambiguous term.
- `sense-cues`: the vocabulary's context words for the neutral and the hurtful sense (engine.senses).

Whether a source can apply to a hit is known before anything is asked (`plan`), so the analysis starts the
asynchronous sources at once and decides the rest while it waits. How a hit is used (quoted, reported,
reclaimed: engine.uses) decides no verdict; it is attached to every verdict afterwards.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.events import Verdict
from engine.explain import vocabulary_explanation
from engine.hits import Hit
from engine.matching.matcher import Matcher
from engine.prompts import Prompts
from engine.senses import sense_cue_verdict

PRECEDENTS = "precedents"
MODEL = "model"
VOCABULARY = "vocabulary"
DISGUISE = "disguise"
SENSE_CUES = "sense-cues"
ORDER = (PRECEDENTS, MODEL, VOCABULARY, DISGUISE, SENSE_CUES)
ALWAYS_DECIDE = (MODEL, VOCABULARY)  # sources that never pass: nothing after them is tried
LOCAL = (VOCABULARY, DISGUISE, SENSE_CUES)  # decided at once, without waiting for anything

VOCABULARY_CONFIDENCE = 0.9  # a non-ambiguous vocabulary term is derogatory by itself
# a disguised spelling (leetspeak, masks, separators) of an ambiguous term: nobody disguises the neutral sense of a
# word ("f4gg0t of wood"), the disguise is there to slip a slur past filters
DISGUISE_CONFIDENCE = 0.75


@dataclass(frozen=True)
class Plan:
    """Each hit's route: the sources that may decide it, in the order they are tried (the fallback after them);
    and the hits grouped by where their route begins, each group in text order."""

    routes: Mapping[str, tuple[str, ...]]
    at_once: tuple[Hit, ...]  # routes beginning with a LOCAL source: decided before anything is waited for
    to_precedents: tuple[Hit, ...]  # offered to the precedent source first
    to_model: tuple[Hit, ...]  # asked of the model at once

    def route(self, hit: Hit) -> tuple[str, ...]:
        return self.routes[hit.id]

    def after(self, hit: Hit, source: str) -> tuple[str, ...]:
        """What is tried for `hit` when `source` passes."""
        route = self.routes[hit.id]
        return route[route.index(source) + 1 :]


def plan(hits: Sequence[Hit], *, mode: str, has_model: bool, has_precedents: bool) -> Plan:
    """The route of every hit: the sources of ORDER that can apply to it, up to the first that always decides."""

    def applies(source: str, hit: Hit) -> bool:
        if source == PRECEDENTS:
            return has_precedents and hit.ambiguous
        if source == MODEL:
            return has_model and (mode == "thorough" or hit.ambiguous)
        if source == VOCABULARY:
            return not hit.ambiguous
        return hit.ambiguous  # disguise and sense cues tell the senses of an ambiguous term apart

    routes: dict[str, tuple[str, ...]] = {}
    starting: dict[str, list[Hit]] = {PRECEDENTS: [], MODEL: [], VOCABULARY: []}  # local sources under VOCABULARY
    for hit in hits:
        route: list[str] = []
        for source in ORDER:
            if applies(source, hit):
                route.append(source)
                if source in ALWAYS_DECIDE:
                    break
        routes[hit.id] = tuple(route)
        starting[VOCABULARY if route[0] in LOCAL else route[0]].append(hit)
    return Plan(routes, tuple(starting[VOCABULARY]), tuple(starting[PRECEDENTS]), tuple(starting[MODEL]))


class LocalSources:
    """The sources that decide without waiting (vocabulary, disguise, sense cues) and the fallback, for one text."""

    def __init__(self, text: str, matcher: Matcher, prompts: Prompts, has_model: bool) -> None:
        self.text = text
        self.matcher = matcher
        self.prompts = prompts
        self.has_model = has_model

    def decide(self, hit: Hit, route: Sequence[str]) -> Verdict:
        """The first verdict of the local sources in `route`, else the fallback."""
        for source in route:
            verdict = self._source(source, hit)
            if verdict is not None:
                return verdict
        return self.fallback(hit)

    def _source(self, source: str, hit: Hit) -> Verdict | None:
        if source == VOCABULARY:
            explanation = vocabulary_explanation([hit], self._templates(hit))
            return Verdict(hit.id, "contentious", VOCABULARY_CONFIDENCE, explanation, VOCABULARY)
        if source == DISGUISE:
            if not (hit.obfuscated and not hit.surface.isalpha()):
                return None
            # letters replaced, masked or spaced out, not merely repeated ("sooo"): the plain word's path, with the
            # disguise as the context that decides its sense (tests/test_analysis.py, disguised spellings)
            explanation = vocabulary_explanation([hit], self._templates(hit))
            return Verdict(hit.id, "contentious", DISGUISE_CONFIDENCE, explanation, DISGUISE)
        if source == SENSE_CUES:
            return sense_cue_verdict(hit, self.text, self.matcher)
        raise ValueError(f"'{source}' is not a source decided at once; these are: {', '.join(LOCAL)}")

    def fallback(self, hit: Hit) -> Verdict:
        """Nothing decided the hit: undetermined, saying why (never neutral)."""
        return Verdict(
            hit.id,
            "undetermined",
            0.0,
            vocabulary_explanation([hit], self._templates(hit)),
            VOCABULARY,
            reason="an ambiguous term, and "
            + ("the model was not asked" if self.has_model else "no language model is configured"),
        )

    def _templates(self, hit: Hit) -> dict[str, Any]:
        return self.prompts.vocabulary_templates(hit.term.language)
