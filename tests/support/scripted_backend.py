"""A scripted LLM backend for orchestration tests. It is NOT a model: it answers from a script,
so tests can control timing, failures and answers exactly, and count calls."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from engine.errors import LLMUnavailable
from engine.llm.backend import Completion, Message


def stage_of(messages: Sequence[Message]) -> str:
    prompt = "\n".join(m.content for m in messages)  # the answer form is in the system message
    if "<targets>" in prompt:
        return "targeting"
    if "<verdict>" in prompt:
        return "disambiguation"
    return "fusion"


def default_answer(messages: Sequence[Message]) -> str:
    stage = stage_of(messages)
    if stage == "disambiguation":
        return (
            "<reasoning>The word is aimed at a person.</reasoning><verdict>contentious</verdict>"
            "<explanation>Here the word is used as an insult against a group of people.</explanation>"
        )
    if stage == "targeting":
        return (
            "<reasoning>No group is attacked.</reasoning><verdict>not_hateful</verdict><targets>none</targets>"
            "<explanation>The text does not attack anyone for who they are.</explanation>"
        )
    return "<explanation>The text uses words that insult a group of people.</explanation>"


class ScriptedLLMBackend:
    def __init__(
        self,
        answer: Callable[[Sequence[Message]], str] = default_answer,
        *,
        delay: float = 0.0,
        fail: str | None = None,
        model_id: str = "scripted:test",
    ) -> None:
        self.answer = answer
        self.delay = delay
        self.fail = fail
        self.model_id = model_id
        self.started = 0
        self.finished = 0
        self.cancelled = 0
        self.running = 0
        self.max_running = 0
        self.stages: list[str] = []

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Completion:
        self.started += 1
        self.running += 1
        self.max_running = max(self.max_running, self.running)
        self.stages.append(stage_of(messages))
        try:
            await asyncio.sleep(self.delay)
            if self.fail:
                raise LLMUnavailable(self.fail)
            text = self.answer(messages)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1
        self.finished += 1
        return Completion(text, self.model_id, "stop")

    async def aclose(self) -> None:
        return None
