"""One analysis as an async stream of typed events (docs/contracts.md), never failing open.

Order: `analysis`, every `hit` (before any model call is awaited), then `verdict`s and the
`targeting` result as they complete, then `explanation`, `decision` and always `done`.

Ambiguous hits are first offered to the precedent source (earlier moderator verdicts, engine.precedents), if
one is given: a hit it decides costs no model call. Only the hits it leaves undecided go to the model (or, in
vocabulary-only mode, to sense cues); the targeting call does not wait for it.

All model calls of a text start at once, bounded by a semaphore; identical requests share one
call (also across concurrent analyses) and answers are cached persistently. A consumer that
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
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.cache import ResultCache, cache_key
from engine.decision import decide
from engine.detector import Detector
from engine.errors import LLMUnavailable
from engine.events import (
    AnalysisStarted,
    Decision,
    Done,
    ErrorEvent,
    Event,
    Explanation,
    HitFound,
    Quote,
    Targeting,
    Verdict,
)
from engine.explain import check_faithfulness, vocabulary_explanation
from engine.hits import Hit
from engine.llm.backend import Completion, LLMBackend, Message
from engine.parsing import Parsed, parse_disambiguation, parse_fusion, parse_targeting, quotes_in
from engine.precedents import PrecedentSource, SourceFailed
from engine.prompts import Prompts
from engine.scope import Scope
from engine.senses import sense_cue_verdict
from engine.uses import UseDetector, UseReading
from engine.vocabulary.model import CATEGORIES

MODES = ("fast", "thorough")
_TARGETING = "\x00targeting"
VOCABULARY_CONFIDENCE = 0.9  # a non-ambiguous vocabulary term is derogatory by itself
DEFAULT_MODEL_CONFIDENCE = 0.7  # a parsed answer from a backend that gives no log-probabilities
# a disguised spelling (leetspeak, masks, separators) of an ambiguous term: nobody disguises the neutral sense of a
# word ("f4gg0t of wood"), the disguise is there to slip a slur past filters
DISGUISE_CONFIDENCE = 0.75
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


@dataclass
class BackendRouter:
    """The backend for each language (a per-language override, else the default, else none)."""

    default: LLMBackend | None = None
    per_language: dict[str, LLMBackend] = field(default_factory=dict)

    def for_language(self, language: str) -> LLMBackend | None:
        return self.per_language.get(language, self.default)

    def all(self) -> list[LLMBackend]:
        backends = [*self.per_language.values(), *([self.default] if self.default else [])]
        return list({id(b): b for b in backends}.values())


@dataclass(frozen=True)
class Outcome:
    parsed: Parsed | None = None
    model: str = ""
    cached: bool = False
    error: ErrorEvent | None = None


class _Shared:
    """A call several waiters share; cancelled when its last waiter goes away."""

    def __init__(self, task: asyncio.Task[Outcome]) -> None:
        self.task = task
        self.waiters = 0

    async def wait(self) -> Outcome:
        self.waiters += 1
        try:
            return await asyncio.shield(self.task)
        finally:
            self.waiters -= 1
            if self.waiters == 0 and not self.task.done():
                self.task.cancel()


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
    ) -> None:
        self.detector = detector
        self.precedents = precedents
        self.backends = backends or BackendRouter()
        self.prompts = prompts or Prompts()
        # how each hit is used (quoted, reported, reclaimed...): rules in prompts/<lang>/use.yaml unless given
        self.uses = uses or UseDetector(self.prompts.root)
        self.cache = cache
        self.config = config or AnalyzerConfig()
        self.llm_calls = 0  # calls actually sent to a backend, for tests and benchmarks
        self._slots = asyncio.Semaphore(self.config.concurrency)
        self._inflight: dict[str, _Shared] = {}

    # -- model calls ----------------------------------------------------------------------
    async def _ask(
        self,
        backend: LLMBackend,
        stage: str,
        key_parts: tuple[str, ...],
        messages: list[Message],
        parse: Callable[[Completion], Parsed],
    ) -> Outcome:
        key = cache_key(stage, *key_parts, self.detector.vocabulary.version, self.prompts.version, backend.model_id)
        shared = self._inflight.get(key)
        if shared is None:
            task = asyncio.ensure_future(self._call(backend, stage, key, messages, parse))
            shared = self._inflight[key] = _Shared(task)
            task.add_done_callback(lambda _t: self._inflight.pop(key, None))
        return await shared.wait()

    async def _call(
        self,
        backend: LLMBackend,
        stage: str,
        key: str,
        messages: list[Message],
        parse: Callable[[Completion], Parsed],
    ) -> Outcome:
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                return Outcome(_parsed_from(hit), hit.get("model", backend.model_id), cached=True)
        try:
            async with self._slots:
                self.llm_calls += 1
                completion = await asyncio.wait_for(
                    backend.complete(messages, max_tokens=self.config.max_tokens, temperature=self.config.temperature),
                    self.config.timeout,
                )
        except TimeoutError:
            return Outcome(
                model=backend.model_id,
                error=ErrorEvent(
                    "llm-timeout", f"{backend.model_id} gave no answer within {self.config.timeout:g} s", stage
                ),
            )
        except LLMUnavailable as exc:
            return Outcome(model=backend.model_id, error=ErrorEvent(exc.code, exc.message, stage))
        parsed = parse(completion)
        if self.cache is not None:
            # an answer is cached even when unreadable (at temperature 0 asking again gives the
            # same answer); a call that failed or timed out is not, so it is tried again
            await self.cache.set(key, _parsed_to(parsed, backend.model_id))
        return Outcome(parsed, backend.model_id)

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
            from engine.errors import UneraseError

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
        matcher = self.detector.matcher(lang)
        # quoted, reported, reclaimed...: rules costing some 0.1 ms per hit, read before the first hit is sent; a
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

        verdicts: dict[str, Verdict] = {}
        ambiguous = [h for h in hits if h.ambiguous]
        # precedents are asked about every ambiguous hit first; only those they leave undecided cost a model call
        consult = self.precedents is not None and bool(ambiguous)
        to_model = [h for h in hits if backend is not None and (mode == "thorough" or h.ambiguous)]
        tasks: dict[asyncio.Future[Outcome], str] = {}
        groups: dict[str, list[Hit]] = {}

        def ask_model(model_hits: Sequence[Hit]) -> None:
            assert backend is not None
            for hit in model_hits:
                # the same term written the same way in the same text is one question
                key = f"{hit.term.id}\x00{hit.surface.casefold()}"
                groups.setdefault(key, []).append(hit)
                if key not in tasks.values():
                    job = self._ask(
                        backend,
                        "disambiguation",
                        (text, hit.term.id, hit.surface.casefold()),
                        self._disambiguation_messages(hit, text, lang),
                        functools.partial(parse_disambiguation, language=self.prompts.language_for(lang)),
                    )
                    tasks[asyncio.ensure_future(job)] = key

        # the calls start now, while the hits are being sent; nothing waits for them yet
        if backend is not None:
            tasks[
                asyncio.ensure_future(
                    self._ask(
                        backend,
                        "targeting",
                        (text,),
                        self._targeting_messages(text, lang),
                        functools.partial(
                            parse_targeting, language=self.prompts.language_for(lang), categories=CATEGORIES
                        ),
                    )
                )
            ] = _TARGETING
            ask_model([h for h in to_model if not (consult and h.ambiguous)])
        lookup = asyncio.ensure_future(self._consult(ambiguous, text, lang, scope)) if consult else None
        targeting = Targeting("skipped", reason="vocabulary-only mode: no language model configured")
        try:
            for hit in hits:
                yield HitFound(hit, readings[hit.id].use, readings[hit.id].cue)
            for hit in hits:
                if hit not in to_model and not (consult and hit.ambiguous):
                    verdict = used(self._vocabulary_verdict(hit, text, matcher, backend is not None))
                    verdicts[hit.id] = verdict
                    yield verdict
            if lookup is not None:
                decided, error = await lookup
                if error is not None:
                    yield error
                for hit in ambiguous:
                    verdict_or_none = decided.get(hit.id)
                    if verdict_or_none is None and backend is None:
                        verdict_or_none = self._vocabulary_verdict(hit, text, matcher, False)
                    if verdict_or_none is not None:
                        verdict_or_none = used(verdict_or_none)
                        verdicts[hit.id] = verdict_or_none
                        yield verdict_or_none
                if backend is not None:
                    ask_model([h for h in ambiguous if h in to_model and h.id not in decided])
            if backend is None:
                yield targeting  # skipped, and saying so: readers learn what was not checked
            cached_all = bool(tasks)
            pending = set(tasks)
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    key, outcome = tasks[task], task.result()
                    cached_all = cached_all and outcome.cached
                    if outcome.error is not None:
                        yield outcome.error
                    if key == _TARGETING:
                        targeting = _targeting(outcome, text)
                        yield targeting
                    else:
                        for hit in groups[key]:
                            verdict = used(_verdict(hit, outcome), outcome.model or "a model")
                            verdicts[hit.id] = verdict
                            yield verdict
        finally:
            # reached also when the consumer stops listening: nothing is left running
            running: list[asyncio.Future[Any]] = [*tasks, *([lookup] if lookup is not None else [])]
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

    def _vocabulary_verdict(self, hit: Hit, text: str, matcher: Any, has_model: bool) -> Verdict:
        templates = self.prompts.vocabulary_templates(hit.term.language)
        if not hit.ambiguous:
            return Verdict(
                hit.id, "contentious", VOCABULARY_CONFIDENCE, vocabulary_explanation([hit], templates), "vocabulary"
            )
        if hit.obfuscated and not hit.surface.isalpha():
            # letters replaced, masked or spaced out, not merely repeated ("sooo"): the plain word's path, with the
            # disguise as the context that decides its sense (tests/test_analysis.py, disguised spellings)
            return Verdict(
                hit.id,
                "contentious",
                DISGUISE_CONFIDENCE,
                vocabulary_explanation([hit], templates),
                "disguise",
            )
        cue_verdict = sense_cue_verdict(hit, text, matcher)
        if cue_verdict is not None:
            return cue_verdict
        return Verdict(
            hit.id,
            "undetermined",
            0.0,
            vocabulary_explanation([hit], templates),
            "vocabulary",
            reason="an ambiguous term, and "
            + ("the model was not asked" if has_model else "no language model is configured"),
        )

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
            outcome = await self._ask(
                backend,
                "fusion",
                (text, *parts),
                self.prompts.template("fusion", lang).render(
                    text=text, explanations="\n".join(f"- {p}" for p in parts)
                ),
                functools.partial(parse_fusion, language=self.prompts.language_for(lang)),
            )
            if outcome.error is not None:
                yield outcome.error
            if outcome.parsed is not None and outcome.parsed.status != "undetermined":
                explanation = outcome.parsed.explanation
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


def _parsed_to(parsed: Parsed, model: str) -> dict[str, Any]:
    return {
        "status": parsed.status,
        "explanation": parsed.explanation,
        "reason": parsed.reason,
        "fields": [list(f) for f in parsed.fields],
        "confidence": parsed.confidence,
        "model": model,
    }


def _parsed_from(data: dict[str, Any]) -> Parsed:
    return Parsed(
        data["status"],
        data["explanation"],
        data.get("reason", ""),
        tuple((str(k), str(v)) for k, v in data.get("fields", [])),
        data.get("confidence"),
    )


def _verdict(hit: Hit, outcome: Outcome) -> Verdict:
    by = "cache" if outcome.cached else outcome.model
    if outcome.error is not None or outcome.parsed is None:
        reason = outcome.error.message if outcome.error else "no answer"
        return Verdict(hit.id, "undetermined", 0.0, "", by, reason=reason)
    parsed = outcome.parsed
    if parsed.status == "undetermined":
        return Verdict(hit.id, "undetermined", 0.0, "", by, reason=parsed.reason)
    confidence = parsed.confidence if parsed.confidence is not None else DEFAULT_MODEL_CONFIDENCE
    return Verdict(hit.id, parsed.status, confidence, parsed.explanation, by)  # type: ignore[arg-type]


def _targeting(outcome: Outcome, text: str) -> Targeting:
    by = "cache" if outcome.cached else outcome.model
    if outcome.error is not None or outcome.parsed is None:
        reason = outcome.error.message if outcome.error else "no answer"
        return Targeting("undetermined", decided_by=by, reason=reason)
    parsed = outcome.parsed
    if parsed.status == "undetermined":
        return Targeting("undetermined", decided_by=by, reason=parsed.reason)
    quotes = []
    for quote in quotes_in(parsed.explanation):
        at = text.find(quote)
        if at >= 0:
            quotes.append(Quote(quote, at, at + len(quote)))
    targets = tuple(t for t in parsed.field("targets").split(",") if t)
    confidence = parsed.confidence if parsed.confidence is not None else DEFAULT_MODEL_CONFIDENCE
    return Targeting(
        parsed.status,  # type: ignore[arg-type]
        targets,
        parsed.explanation,
        tuple(quotes),
        confidence,
        by,
    )
