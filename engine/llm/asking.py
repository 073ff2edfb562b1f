"""Asking a language model, and what its answers become: the plumbing under engine.analysis.

A question (a stage and the text it is about) is sent once: identical questions in flight share one call, also
across concurrent analyses; answers are cached persistently, unreadable ones too (at temperature 0 asking again
gives the same answer), failures and timeouts not (they are tried again next time). Calls are bounded by a
semaphore. A waiter that goes away cancels a call nobody else waits for. Nothing here raises for a failing
model: a failure is a `ModelAnswer` carrying an `error` event, which becomes an *undetermined* verdict or
targeting result, never a neutral one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.cache import ResultCache, cache_key
from engine.errors import LLMUnavailable
from engine.events import ErrorEvent, Quote, Targeting, Verdict
from engine.hits import Hit
from engine.llm.backend import Completion, LLMBackend, Message
from engine.parsing import Parsed, quotes_in

DEFAULT_MODEL_CONFIDENCE = 0.7  # a parsed answer from a backend that gives no log-probabilities


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
class ModelAnswer:
    """What one question to a model gave: its parsed answer, or the error that stands in for it.

    (Named apart from engine.deferral.Outcome, a reviewed decision for the deferral threshold.)"""

    parsed: Parsed | None = None
    model: str = ""
    cached: bool = False
    error: ErrorEvent | None = None

    @property
    def decided_by(self) -> str:
        return "cache" if self.cached else self.model


class _Shared:
    """A call several waiters share; cancelled when its last waiter goes away."""

    def __init__(self, task: asyncio.Task[ModelAnswer]) -> None:
        self.task = task
        self.waiters = 0

    async def wait(self) -> ModelAnswer:
        self.waiters += 1
        try:
            return await asyncio.shield(self.task)
        finally:
            self.waiters -= 1
            if self.waiters == 0 and not self.task.done():
                self.task.cancel()


class ModelCalls:
    """Every model call of one Analyzer: shared while in flight, cached, bounded, timed out; counted in `sent`."""

    def __init__(
        self,
        cache: ResultCache | None,
        *,
        concurrency: int,
        timeout: float,
        max_tokens: int,
        temperature: float,
    ) -> None:
        self.cache = cache
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.sent = 0  # calls actually sent to a backend, for tests and benchmarks
        self._slots = asyncio.Semaphore(concurrency)
        self._inflight: dict[str, _Shared] = {}

    async def ask(
        self,
        backend: LLMBackend,
        stage: str,
        key_parts: tuple[str, ...],
        messages: list[Message],
        parse: Callable[[Completion], Parsed],
    ) -> ModelAnswer:
        """The answer to one question; `key_parts` (with the stage and the model) say what makes it the same."""
        key = cache_key(stage, *key_parts, backend.model_id)
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
    ) -> ModelAnswer:
        if self.cache is not None:
            hit = await self.cache.get(key)
            if hit is not None:
                return ModelAnswer(_parsed_from(hit), hit.get("model", backend.model_id), cached=True)
        try:
            async with self._slots:
                self.sent += 1
                completion = await asyncio.wait_for(
                    backend.complete(messages, max_tokens=self.max_tokens, temperature=self.temperature),
                    self.timeout,
                )
        except TimeoutError:
            return ModelAnswer(
                model=backend.model_id,
                error=ErrorEvent("llm-timeout", f"{backend.model_id} gave no answer within {self.timeout:g} s", stage),
            )
        except LLMUnavailable as exc:
            return ModelAnswer(model=backend.model_id, error=ErrorEvent(exc.code, exc.message, stage))
        parsed = parse(completion)
        if self.cache is not None:
            # an answer is cached even when unreadable (at temperature 0 asking again gives the
            # same answer); a call that failed or timed out is not, so it is tried again
            await self.cache.set(key, _parsed_to(parsed, backend.model_id))
        return ModelAnswer(parsed, backend.model_id)


def hit_verdict(hit: Hit, answer: ModelAnswer) -> Verdict:
    """The verdict a model's answer gives a hit: undetermined when the call failed or the answer was unreadable."""
    by = answer.decided_by
    if answer.error is not None or answer.parsed is None:
        reason = answer.error.message if answer.error else "no answer"
        return Verdict(hit.id, "undetermined", 0.0, "", by, reason=reason)
    parsed = answer.parsed
    if parsed.status == "undetermined":
        return Verdict(hit.id, "undetermined", 0.0, "", by, reason=parsed.reason)
    confidence = parsed.confidence if parsed.confidence is not None else DEFAULT_MODEL_CONFIDENCE
    return Verdict(hit.id, parsed.status, confidence, parsed.explanation, by)  # type: ignore[arg-type]


def targeting_result(answer: ModelAnswer, text: str) -> Targeting:
    """The targeting result a model's answer gives; the quotes it makes are kept only where they are in `text`."""
    by = answer.decided_by
    if answer.error is not None or answer.parsed is None:
        reason = answer.error.message if answer.error else "no answer"
        return Targeting("undetermined", decided_by=by, reason=reason)
    parsed = answer.parsed
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
