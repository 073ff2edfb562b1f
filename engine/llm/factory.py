"""One place that turns a backend name and its options into an `LLMBackend` (CLI and web app alike)."""

from __future__ import annotations

from engine.errors import UneraseError
from engine.llm.backend import LLMBackend

BACKENDS = ("none", "llama-cpp", "openai")


def make_backend(
    kind: str,
    model: str | None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    threads: int = 2,
    timeout: float = 120.0,
    concurrency: int = 4,
    needs_model: str = "a model (a .gguf file or a model name)",
) -> LLMBackend | None:
    """None for "none" (vocabulary-only). `needs_model` says, in the caller's terms, how to give the model."""
    if kind not in BACKENDS:
        raise UneraseError(f"backend '{kind}' is not known; accepted: {', '.join(BACKENDS)}")
    if kind == "none":
        return None
    if not model:
        raise UneraseError(f"backend {kind} needs {needs_model}")
    if kind == "llama-cpp":
        from engine.llm.llama_cpp_backend import LlamaCppBackend

        return LlamaCppBackend(model, n_threads=threads)
    from engine.llm.openai_backend import OpenAIBackend

    return OpenAIBackend(model, base_url=base_url, api_key=api_key, timeout=timeout, max_concurrency=concurrency)
