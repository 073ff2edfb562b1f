"""A local GGUF model through llama-cpp-python.

One `Llama` instance per (model file, context size, threads) per process, shared by every
backend object that asks for it; a lock serializes calls because a llama.cpp context is not
safe to use from two threads at once. Calls run in a worker thread, off the event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from engine.errors import LLMUnavailable
from engine.llm.backend import Completion, Message

_MODELS: dict[tuple[str, int, int], tuple[Any, threading.Lock]] = {}
_MODELS_LOCK = threading.Lock()


def _shared_model(path: Path, n_ctx: int, n_threads: int) -> tuple[Any, threading.Lock]:
    key = (str(path.resolve()), n_ctx, n_threads)
    with _MODELS_LOCK:
        if key not in _MODELS:
            if not path.is_file():
                raise LLMUnavailable(f"no GGUF model file at {path}; give the path of a .gguf file")
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise LLMUnavailable(
                    "the llama-cpp backend needs llama-cpp-python: pip install llama-cpp-python"
                ) from exc
            try:
                model = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=n_threads, logits_all=True, verbose=False)
            except (ValueError, RuntimeError) as exc:
                raise LLMUnavailable(f"llama.cpp could not load {path}: {exc}") from exc
            _MODELS[key] = (model, threading.Lock())
        return _MODELS[key]


class LlamaCppBackend:
    def __init__(self, model_path: str | Path, *, n_ctx: int = 4096, n_threads: int = 2, logprobs: bool = True) -> None:
        self.path = Path(model_path)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.logprobs = logprobs
        self.model_id = f"llama-cpp:{self.path.name}"

    def _complete(self, messages: Sequence[Message], max_tokens: int, temperature: float) -> Completion:
        model, lock = _shared_model(self.path, self.n_ctx, self.n_threads)
        with lock:
            try:
                # the model's own chat template (from the GGUF metadata) formats the messages
                response = model.create_chat_completion(
                    messages=[{"role": m.role, "content": m.content} for m in messages],
                    max_tokens=max_tokens,
                    temperature=temperature,
                    logprobs=self.logprobs,
                    top_logprobs=1 if self.logprobs else None,
                )
            except (ValueError, RuntimeError) as exc:
                raise LLMUnavailable(f"llama.cpp failed: {exc}") from exc
        choice = response["choices"][0]
        return Completion(
            text=choice["message"].get("content") or "",
            model=self.model_id,
            finish_reason=choice.get("finish_reason"),
            token_logprobs=_logprobs(choice.get("logprobs")),
        )

    async def complete(self, messages: Sequence[Message], *, max_tokens: int, temperature: float) -> Completion:
        return await asyncio.to_thread(self._complete, messages, max_tokens, temperature)

    async def aclose(self) -> None:
        return None


def _logprobs(data: Any) -> tuple[tuple[str, float], ...] | None:
    """OpenAI-style `{"content": [{"token": ..., "logprob": ...}]}`, as llama-cpp-python returns."""
    if not data or not isinstance(data, dict) or not data.get("content"):
        return None
    return tuple((str(item.get("token", "")), float(item.get("logprob", 0.0))) for item in data["content"])
