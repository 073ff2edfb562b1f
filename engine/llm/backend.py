"""The protocol every language-model backend implements, and what a call returns."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True, slots=True)
class Completion:
    """One answer. `token_logprobs` (token text, log-probability) when the backend gives them."""

    text: str
    model: str
    finish_reason: str | None = None
    token_logprobs: tuple[tuple[str, float], ...] | None = None


class LLMBackend(Protocol):
    """A chat model. `model_id` names backend and model; it is part of every cache key."""

    model_id: str

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Completion:
        """One chat completion; raises LLMUnavailable when the model cannot answer."""
        ...

    async def aclose(self) -> None: ...
