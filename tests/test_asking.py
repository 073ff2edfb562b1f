"""Model-call plumbing (engine/llm/asking.py) on its own, with a scripted backend (not a model): one call per
question in flight, what is cached and what is asked again, and what an answer becomes."""

from __future__ import annotations

import asyncio
import functools

from engine.cache import MemoryCache
from engine.detector import Detector
from engine.events import ErrorEvent
from engine.llm.asking import ModelAnswer, ModelCalls, hit_verdict, targeting_result
from engine.llm.backend import Completion, Message
from engine.parsing import Parsed, parse_disambiguation, parse_targeting
from engine.vocabulary.model import CATEGORIES

from .support.scripted_backend import ScriptedLLMBackend

QUESTION = [Message("system", "Answer with <verdict>"), Message("user", "Is it hurtful here?")]
PARSE = functools.partial(parse_disambiguation, language="en")


def calls(cache: MemoryCache | None = None, timeout: float = 5.0) -> ModelCalls:
    return ModelCalls(cache, concurrency=4, timeout=timeout, max_tokens=100, temperature=0.0)


async def test_the_same_question_in_flight_is_one_call() -> None:
    backend = ScriptedLLMBackend(delay=0.05)
    asking = calls()
    first, second = await asyncio.gather(
        asking.ask(backend, "disambiguation", ("a text",), QUESTION, PARSE),
        asking.ask(backend, "disambiguation", ("a text",), QUESTION, PARSE),
    )
    assert backend.started == 1 and asking.sent == 1
    assert first == second and first.parsed is not None and first.parsed.status == "contentious"
    await asking.ask(backend, "disambiguation", ("another text",), QUESTION, PARSE)
    assert backend.started == 2  # another question, another call


async def test_an_unreadable_answer_is_cached_a_failed_call_is_asked_again() -> None:
    cache = MemoryCache()
    unreadable = ScriptedLLMBackend(lambda _m: "I would rather not say.")
    asking = calls(cache)
    answer = await asking.ask(unreadable, "disambiguation", ("t",), QUESTION, PARSE)
    assert answer.parsed is not None and answer.parsed.status == "undetermined" and not answer.cached
    again = await asking.ask(unreadable, "disambiguation", ("t",), QUESTION, PARSE)
    assert again.cached and unreadable.started == 1  # temperature 0: asking again gives the same answer

    failing = ScriptedLLMBackend(fail="connection refused", model_id="scripted:failing")
    for _ in range(2):
        answer = await asking.ask(failing, "disambiguation", ("t",), QUESTION, PARSE)
        assert answer.error == ErrorEvent("llm-unavailable", "connection refused", "disambiguation")
    assert failing.started == 2  # a failure is never cached

    slow = ScriptedLLMBackend(delay=1.0, model_id="scripted:slow")
    answer = await calls(cache, timeout=0.01).ask(slow, "targeting", ("t",), QUESTION, PARSE)
    assert answer.error is not None and answer.error.code == "llm-timeout"
    assert answer.error.message == "scripted:slow gave no answer within 0.01 s"


async def test_a_call_is_cancelled_when_its_last_waiter_goes_away() -> None:
    backend = ScriptedLLMBackend(delay=5)
    asking = calls()
    one = asyncio.ensure_future(asking.ask(backend, "disambiguation", ("t",), QUESTION, PARSE))
    two = asyncio.ensure_future(asking.ask(backend, "disambiguation", ("t",), QUESTION, PARSE))
    await asyncio.sleep(0.02)
    one.cancel()
    await asyncio.sleep(0.02)
    assert backend.cancelled == 0  # the other waiter still wants the answer
    two.cancel()
    await asyncio.gather(one, two, return_exceptions=True)
    await asyncio.sleep(0)
    assert backend.started == 1 and backend.cancelled == 1


def test_an_answer_that_is_missing_or_undecided_gives_an_undetermined_verdict(detector: Detector) -> None:
    (hit,) = detector.detect("he is crippled", "en").hits
    failed = ModelAnswer(model="m", error=ErrorEvent("llm-timeout", "m gave no answer within 1 s", "disambiguation"))
    verdict = hit_verdict(hit, failed)
    assert (verdict.status, verdict.confidence, verdict.decided_by) == ("undetermined", 0.0, "m")
    assert verdict.reason == "m gave no answer within 1 s"
    assert hit_verdict(hit, ModelAnswer(model="m")).reason == "no answer"
    unsure = ModelAnswer(Parsed("undetermined", "", "the answer was cut off"), "m", cached=True)
    verdict = hit_verdict(hit, unsure)
    assert (verdict.status, verdict.decided_by, verdict.reason) == ("undetermined", "cache", "the answer was cut off")
    sure = ModelAnswer(Parsed("neutral", "A medical description.", confidence=None), "m")
    assert (hit_verdict(hit, sure).status, hit_verdict(hit, sure).confidence) == ("neutral", 0.7)


def test_a_targeting_answer_keeps_only_quotes_that_are_in_the_text() -> None:
    answer = (
        "<reasoning>r</reasoning><verdict>hateful</verdict><targets>religion</targets>"
        "<explanation>It says “go home” and “never said this” about a faith.</explanation>"
    )
    parsed = parse_targeting(Completion(answer, "m", "stop"), "en", CATEGORIES)
    text = "They should go home, all of them."
    targeting = targeting_result(ModelAnswer(parsed, "m"), text)
    assert targeting.status == "hateful" and targeting.characteristics == ("religion",)
    assert [(q.text, q.start, q.end) for q in targeting.quotes] == [("go home", 12, 19)]
