"""Any OpenAI-compatible server (vLLM, llama.cpp server, Ollama, hosted APIs) via `openai`.

Async; a timeout per call; retries with exponential backoff and jitter on transient errors only
(connection problems, timeouts, rate limits, 5xx); at most `max_concurrency` calls in flight.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from engine.errors import LLMUnavailable
from engine.llm.backend import Completion, Message
from engine.llm.llama_cpp_backend import _logprobs


class OpenAIBackend:
    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        retries: int = 2,
        backoff: float = 0.5,
        max_concurrency: int = 4,
        logprobs: bool = True,
    ) -> None:
        try:
            import openai
        except ImportError as exc:
            raise LLMUnavailable("the openai backend needs the 'openai' package: pip install openai") from exc
        self._openai = openai
        self.client = openai.AsyncOpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=0
        )
        self.model = model
        self.model_id = f"openai:{model}"
        self.retries = retries
        self.backoff = backoff
        self.logprobs = logprobs
        self._slots = asyncio.Semaphore(max_concurrency)
        self.base_url = base_url

    def _transient(self, exc: Exception) -> bool:
        o = self._openai
        return isinstance(exc, o.APIConnectionError | o.APITimeoutError | o.RateLimitError | o.InternalServerError)

    async def _create(self, messages: Sequence[Message], max_tokens: int, temperature: float) -> Any:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if self.logprobs:
            # the chosen tokens' log-probabilities are all the confidence needs; without top_logprobs
            # llama.cpp's server sends 20 alternatives per token (a response ~20 times larger to parse)
            kwargs["logprobs"] = True
            kwargs["top_logprobs"] = 1
        return await self.client.chat.completions.create(**kwargs)

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Completion:
        async with self._slots:
            attempt = 0
            while True:
                try:
                    response = await self._create(messages, max_tokens, temperature)
                    break
                except self._openai.BadRequestError as exc:
                    if self.logprobs and "logprob" in str(exc).lower():
                        self.logprobs = False  # the server does not offer them; ask without
                        continue
                    raise LLMUnavailable(f"the model server refused the request: {exc}") from exc
                except Exception as exc:
                    if not isinstance(exc, self._openai.OpenAIError):
                        raise
                    if not self._transient(exc) or attempt >= self.retries:
                        where = self.base_url or "the default endpoint"
                        raise LLMUnavailable(
                            f"the model server at {where} failed after {attempt + 1} attempt(s): "
                            f"{type(exc).__name__}: {exc}"
                        ) from exc
                    # exponential backoff with full jitter, so many clients do not retry in step
                    await asyncio.sleep(random.uniform(0, self.backoff * 2**attempt))
                    attempt += 1
        choice = response.choices[0]
        logprobs = None
        if getattr(choice, "logprobs", None) is not None and choice.logprobs.content:
            logprobs = _logprobs(
                {"content": [{"token": t.token, "logprob": t.logprob} for t in choice.logprobs.content]}
            )
        return Completion(
            text=choice.message.content or "",
            model=self.model_id,
            finish_reason=choice.finish_reason,
            token_logprobs=logprobs,
        )

    async def aclose(self) -> None:
        await self.client.close()
