"""One analysis as an async stream of typed events (docs/contracts.md), never failing open.

Order: `analysis`, every `hit` (before any model call is awaited), then `verdict`s and the
`targeting` result as they complete, then `explanation`, `decision` and always `done`.

Which source decides each hit is planned before anything is asked (engine.plan): the precedent source
(earlier moderator verdicts and sense examples), the model, the vocabulary, a disguise, sense cues, tried in
that order, undetermined when none decides. Ambiguous hits are first offered to the precedent source, if one is
given: a hit it decides costs no model call. Only the hits it leaves undecided go to the model (or, in
vocabulary-only mode, to sense cues); the targeting call does not wait for it.

All model calls of a text start at once, bounded by a semaphore; identical requests share one
call (also across concurrent analyses) and answers are cached persistently (engine.llm.asking). A consumer that
stops listening cancels the calls it was waiting for. A failing or unavailable model gives
`undetermined` stages, an `error` event, and an honest decision.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from engine.cache import ResultCache
from engine.decision import decide
from engine.detector import Detector
from engine.errors import UneraseError
from engine.events import (
    AnalysisStarted,
    Decision,
    Done,
    ErrorEvent,
    Event,
    Explanation,
    HitFound,
    Targeting,
    Verdict,
)
from engine.explain import check_faithfulness, vocabulary_explanation
from engine.hits import Hit
from engine.llm.asking import BackendRouter, ModelAnswer, ModelCalls, hit_verdict, targeting_result
from engine.llm.backend import Completion, LLMBackend, Message
from engine.parsing import Parsed, parse_disambiguation, parse_fusion, parse_targeting
from engine.plan import MODEL, PRECEDENTS, LocalSources, Plan, plan
from engine.precedents import PrecedentSource, SourceFailed
from engine.prompts import Prompts
from engine.scope import Scope
from engine.uses import UseDetector, UseReading, UseSource
from engine.vocabulary.model import CATEGORIES

__all__ = ["MODES", "Analyzer", "AnalyzerConfig", "BackendRouter"]  # BackendRouter lives in engine.llm.asking

MODES = ("fast", "thorough")
_TARGETING = "\x00targeting"
USES_ON_LOOP = 50  # hits whose use is read on the event loop; more are read in a thread

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class AnalyzerConfig:
    mode: str = "fast"
    concurrency: int = 4
    timeout: float = 120.0
    threshold: float = 0.5
    max_tokens: int = 400
    temperature: float = 0.0


class Analyzer:
    def __init__(
        self,
        detector: Detector,
        backends: BackendRouter | None = None,
        prompts: Prompts | None = None,
        cache: ResultCache | None = None,
        config: AnalyzerConfig | None = None,
        precedents: PrecedentSource | None = None,
        uses: UseDetector | None = None,
        use_source: UseSource | None = None,
    ) -> None:
        self.detector = detector
        self.precedents = precedents
        self.backends = backends or BackendRouter()
        self.prompts = prompts or Prompts()
        # how each hit is used (quoted, reported, reclaimed...): rules in prompts/<lang>/use.yaml unless given
        self.uses = uses or UseDetector(self.prompts.root)
        # a second reading of the hits the rules leave as attacks without a cue (engine.use_model), after the hits
        self.use_source = use_source
        self.cache = cache
        self.config = config or AnalyzerConfig()
        self.calls = ModelCalls(
            cache,
            concurrency=self.config.concurrency,
            timeout=self.config.timeout,
            max_tokens=self.config.max_tokens,
            temperature=self.config.temperature,
        )

    @property
    def llm_calls(self) -> int:
        """Calls actually sent to a backend, for tests and benchmarks."""
        return self.calls.sent

    def _ask(
        self,
        backend: LLMBackend,
        stage: str,
        key_parts: tuple[str, ...],
        messages: list[Message],
        parse: Callable[[Completion], Parsed],
    ) -> Coroutine[Any, Any, ModelAnswer]:
        """One question to the model; an answer is only reused for the same vocabulary and prompts."""
        versions = (self.detector.vocabulary.version, self.prompts.version)
        return self.calls.ask(backend, stage, (*key_parts, *versions), messages, parse)

    def _plan(self, hits: Sequence[Hit], mode: str, has_model: bool) -> Plan:
        """Which sources may decide each hit, in order (engine.plan): precedents and sense examples, the model,
        the vocabulary, a disguise, sense cues; undetermined when none does."""
        return plan(hits, mode=mode, has_model=has_model, has_precedents=self.precedents is not None)

    # -- the stream -----------------------------------------------------------------------
    async def analyze(
        self,
        text: str,
        language: str | None = None,
        mode: str | None = None,
        analysis_id: str | None = None,
        scope: Scope | None = None,
    ) -> AsyncIterator[Event]:
        """Validates the input first (raising UneraseError before any event), then streams.

        `scope` applies a site's term rules (excluded terms, terms marked ambiguous)."""
        mode = mode or self.config.mode
        if mode not in MODES:
            raise UneraseError(f"mode '{mode}' is not known; accepted: {', '.join(MODES)}")
        started = time.perf_counter()
        calls_before = self.llm_calls
        detection = await asyncio.to_thread(self.detector.detect, text, language)
        text, lang, hits = detection.text, detection.language, detection.hits
        if scope is not None:
            hits = scope.apply(hits)
        backend = self.backends.for_language(lang)
        yield AnalysisStarted(
            analysis_id or uuid.uuid4().hex,
            lang,
            detection.language_detected,
            detection.language_confidence,
            mode if backend else "vocabulary-only",
            self.detector.vocabulary.version,
            self.prompts.version,
            (backend.model_id,) if backend else (),
            len(hits),
        )
        # quoted, reported, reclaimed...: rules costing some 0.05 ms per hit, read before the first hit is sent; a
        # text with very many hits is read off the event loop
        if len(hits) > USES_ON_LOOP:
            readings = await asyncio.to_thread(self.uses.read, text, hits, lang)
        else:
            readings = self.uses.read(text, hits, lang)

        def used(verdict: Verdict, model: str | None = None) -> Verdict:
            """The verdict with its hit's use; a model that judged the hit contentious has already weighed quotation
            and reclaimed use (its prompt asks it to), so its verdict is an attack whatever the rules read."""
            reading = readings.get(verdict.hit_id, UseReading())
            if model is not None and verdict.status == "contentious":
                reading = UseReading("attack", f"judged by {model}", model)
            return dataclasses.replace(verdict, use=reading.use, use_cue=reading.cue)

        routes = self._plan(hits, mode, backend is not None)
        local = LocalSources(text, self.detector.matcher(lang), self.prompts, backend is not None)
        verdicts: dict[str, Verdict] = {}
        # the model calls start now, while the hits are being sent; nothing waits for them yet
        questions = _Questions(self, backend, text, lang)
        if backend is not None:
            questions.ask_targeting()
            questions.ask_about(routes.to_model)
        # precedents are asked about their hits first; only those they leave undecided cost a model call
        offered = routes.to_precedents
        lookup = asyncio.ensure_future(self._consult(offered, text, lang, scope)) if offered else None
        targeting = Targeting("skipped", reason="vocabulary-only mode: no language model configured")
        try:
            for hit in hits:
                yield HitFound(hit, readings[hit.id].use, readings[hit.id].cue)
            if self.use_source is not None and hits:
                readings.update(await self._second_reading(text, hits, lang, readings))
            for hit in routes.at_once:
                verdict = used(local.decide(hit, routes.route(hit)))
                verdicts[hit.id] = verdict
                yield verdict
            if lookup is not None:
                decided, error = await lookup
                if error is not None:
                    yield error
                undecided: list[Hit] = []
                for hit in offered:
                    found = decided.get(hit.id)
                    if found is None:
                        then = routes.after(hit, PRECEDENTS)
                        if then[:1] == (MODEL,):
                            undecided.append(hit)  # asked once this step's verdicts are out
                            continue
                        found = local.decide(hit, then)
                    verdicts[hit.id] = found = used(found)
                    yield found
                questions.ask_about(undecided)
            if backend is None:
                yield targeting  # skipped, and saying so: readers learn what was not checked
            cached_all = bool(questions.tasks)
            while questions.pending:
                for key, answer in await questions.answered():
                    cached_all = cached_all and answer.cached
                    if answer.error is not None:
                        yield answer.error
                    if key == _TARGETING:
                        targeting = targeting_result(answer, text)
                        yield targeting
                    else:
                        for hit in questions.groups[key]:
                            verdict = used(hit_verdict(hit, answer), answer.model or "a model")
                            verdicts[hit.id] = verdict
                            yield verdict
        finally:
            # reached also when the consumer stops listening: nothing is left running
            running: list[asyncio.Future[Any]] = [*questions.tasks, *([lookup] if lookup is not None else [])]
            for future in running:
                future.cancel()
            await asyncio.gather(*running, return_exceptions=True)

        decision = decide(hits, verdicts, targeting, threshold=self.config.threshold)
        async for event in self._explain(backend, text, lang, hits, verdicts, targeting, decision):
            yield event
        yield decision
        yield Done(
            (time.perf_counter() - started) * 1000,
            cached=cached_all and self.llm_calls == calls_before,
            llm_calls=self.llm_calls - calls_before,
        )

    async def collect(self, text: str, language: str | None = None, mode: str | None = None) -> list[Event]:
        return [event async for event in self.analyze(text, language, mode)]

    # -- pieces -----------------------------------------------------------------------------
    async def _second_reading(
        self, text: str, hits: Sequence[Hit], language: str, readings: dict[str, UseReading]
    ) -> dict[str, UseReading]:
        """The use source's readings of the hits it reads otherwise than the rules; none when it fails."""
        assert self.use_source is not None
        try:
            found = await self.use_source.read(text, hits, language, readings)
        except Exception:  # any failure of the source: the rules' readings stand
            logger.warning("the second reading of uses failed, the rules' readings stand", exc_info=True)
            return {}
        return {hit_id: r for hit_id, r in found.items() if hit_id in readings}

    async def _consult(
        self, ambiguous: Sequence[Hit], text: str, language: str, scope: Scope | None
    ) -> tuple[dict[str, Verdict], ErrorEvent | None]:
        """The precedent source's verdicts for these hits; a failing source counts as one that decided nothing."""
        assert self.precedents is not None
        wanted = {h.id for h in ambiguous}
        try:
            decided = await self.precedents.decide(ambiguous, text, language, scope.site if scope else None)
        except Exception as exc:  # any failure of the source: the analysis goes on as without one
            logger.warning("precedent lookup failed, going on without it", exc_info=True)
            message = f"earlier moderator decisions could not be read: {exc}"
            # a chain of sources (engine.precedents.ChainedSources) keeps what its working sources decided
            partial = exc.decided if isinstance(exc, SourceFailed) else {}
            kept = {hit_id: v for hit_id, v in partial.items() if hit_id in wanted and v.hit_id == hit_id}
            return kept, ErrorEvent("precedent-failed", message, "precedent")
        return {hit_id: v for hit_id, v in decided.items() if hit_id in wanted and v.hit_id == hit_id}, None

    def _disambiguation_messages(self, hit: Hit, text: str, language: str) -> list[Message]:
        template = self.prompts.template("disambiguation", language)
        cues = hit.term.sense_cues
        return template.render(
            text=text,
            term=hit.term.literal,
            surface=hit.surface,
            description=hit.issue.description,
            categories=", ".join(hit.issue.categories),
            neutral_cues=", ".join(cues.neutral) or "-",
            contentious_cues=", ".join(cues.contentious) or "-",
        )

    def _targeting_messages(self, text: str, language: str) -> list[Message]:
        return self.prompts.template("targeting", language).render(text=text, categories=", ".join(CATEGORIES))

    async def _explain(
        self,
        backend: LLMBackend | None,
        text: str,
        lang: str,
        hits: Sequence[Hit],
        verdicts: dict[str, Verdict],
        targeting: Targeting,
        decision: Decision,
    ) -> AsyncIterator[Event]:
        matcher = self.detector.matcher(lang)
        templates = self.prompts.vocabulary_templates(lang)
        relevant = [h for h in hits if verdicts[h.id].status != "neutral"]
        fallback = vocabulary_explanation(relevant, templates)
        rules = self.uses.rules(lang)
        notes = [rules.note(verdicts[h.id].use, h.surface) for h in relevant if verdicts[h.id].mention] if rules else []
        if any(notes):
            # readers learn first that the word was recognised as quoted or reclaimed, then what it means
            fallback = " ".join([*dict.fromkeys(n for n in notes if n), fallback])
        if backend is None:
            yield Explanation(fallback, tuple(h.id for h in relevant), "faithful", (), "vocabulary")
            return
        # a model was asked: the vocabulary explanation stands in for what it could not give, and says so
        undecided = targeting.status == "undetermined" or any(verdicts[h.id].status == "undetermined" for h in relevant)
        fallback = vocabulary_explanation(relevant, templates, model_asked=True)
        if any(notes):
            fallback = " ".join([*dict.fromkeys(n for n in notes if n), fallback])
        if undecided and relevant:
            fallback = str(templates["undecided"]) + " " + fallback
        parts = list(
            dict.fromkeys(
                # a quoted or reclaimed word is explained by the vocabulary explanation, which names its use
                [
                    verdicts[h.id].explanation
                    for h in hits
                    if verdicts[h.id].status == "contentious" and not verdicts[h.id].mention
                ]
                + ([targeting.explanation] if targeting.status == "hateful" and targeting.explanation else [])
            )
        )
        decided_by = backend.model_id
        if not parts:
            explanation = targeting.explanation if targeting.status == "not_hateful" and not relevant else fallback
        elif len(parts) == 1:
            explanation = parts[0]
        else:
            answer = await self._ask(
                backend,
                "fusion",
                (text, *parts),
                self.prompts.template("fusion", lang).render(
                    text=text, explanations="\n".join(f"- {p}" for p in parts)
                ),
                functools.partial(parse_fusion, language=self.prompts.language_for(lang)),
            )
            if answer.error is not None:
                yield answer.error
            if answer.parsed is not None and answer.parsed.status != "undetermined":
                explanation = answer.parsed.explanation
            else:
                explanation, decided_by = " ".join(parts), "concatenation"
        checked = check_faithfulness(explanation, text, hits, matcher)
        if checked.faithfulness == "unfaithful":
            # a model's explanation that quotes what is not there or names terms not found is
            # replaced by the vocabulary explanation, which quotes only hits and is grounded by
            # construction (its descriptions may quote examples, which are not claims about the text)
            cited = tuple(h.id for h in relevant)
            yield Explanation(fallback, cited, "repaired", checked.problems, "vocabulary")
            return
        yield Explanation(checked.text, checked.cited_hits, checked.faithfulness, checked.problems, decided_by)


class _Questions:
    """The model questions of one analysis: the targeting question and one per term and spelling, each started
    as soon as it is asked, answered in the order the answers come."""

    def __init__(self, analyzer: Analyzer, backend: LLMBackend | None, text: str, language: str) -> None:
        self.analyzer = analyzer
        self.backend = backend
        self.text = text
        self.language = language
        self.tasks: dict[asyncio.Future[ModelAnswer], str] = {}  # each running question, with its key
        self.groups: dict[str, list[Hit]] = {}  # the hits each disambiguation question decides
        self.pending: set[asyncio.Future[ModelAnswer]] = set()

    def ask_targeting(self) -> None:
        assert self.backend is not None
        job = self.analyzer._ask(
            self.backend,
            "targeting",
            (self.text,),
            self.analyzer._targeting_messages(self.text, self.language),
            functools.partial(
                parse_targeting, language=self.analyzer.prompts.language_for(self.language), categories=CATEGORIES
            ),
        )
        self._start(job, _TARGETING)

    def ask_about(self, hits: Sequence[Hit]) -> None:
        for hit in hits:
            assert self.backend is not None
            # the same term written the same way in the same text is one question
            key = f"{hit.term.id}\x00{hit.surface.casefold()}"
            self.groups.setdefault(key, []).append(hit)
            if key not in self.tasks.values():
                job = self.analyzer._ask(
                    self.backend,
                    "disambiguation",
                    (self.text, hit.term.id, hit.surface.casefold()),
                    self.analyzer._disambiguation_messages(hit, self.text, self.language),
                    functools.partial(parse_disambiguation, language=self.analyzer.prompts.language_for(self.language)),
                )
                self._start(job, key)

    def _start(self, job: Coroutine[Any, Any, ModelAnswer], key: str) -> None:
        task = asyncio.ensure_future(job)
        self.tasks[task] = key
        self.pending.add(task)

    async def answered(self) -> list[tuple[str, ModelAnswer]]:
        """The next answers to come (at least one), with their questions' keys."""
        done, self.pending = await asyncio.wait(self.pending, return_when=asyncio.FIRST_COMPLETED)
        return [(self.tasks[task], task.result()) for task in done]
