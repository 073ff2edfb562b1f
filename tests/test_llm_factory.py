"""Building a backend from a name and options: one function for the CLI and the web app."""

from __future__ import annotations

import pytest

from engine.errors import UneraseError
from engine.llm.factory import make_backend
from engine.llm.openai_backend import OpenAIBackend


def test_none_is_vocabulary_only_and_errors_name_what_is_accepted() -> None:
    assert make_backend("none", None) is None
    with pytest.raises(UneraseError, match="accepted: none, llama-cpp, openai"):
        make_backend("gpt", "m")
    with pytest.raises(UneraseError, match="needs --model"):
        make_backend("openai", None, needs_model="--model")


def test_openai_backend_gets_its_options() -> None:
    backend = make_backend("openai", "local", base_url="http://127.0.0.1:9/v1", api_key="k", timeout=3.0)
    assert isinstance(backend, OpenAIBackend) and backend.model_id.endswith("local")
