"""A SCRIPTED stand-in for an OpenAI-compatible model server, NOT a model.

A few lines of HTTP on 127.0.0.1 that answer POST /v1/chat/completions with `answer(messages)` (by default the
answers of tests/support/scripted_backend.py), so that the app's real openai backend, parser and storage are what a
test exercises. It counts every request and keeps what each asked, so tests can say how often the same question
reached "the model" (several app processes sharing one server), and it can answer slowly (`delay`) to stand in for
a model that is the bottleneck.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engine.llm.backend import Message
from tests.support.scripted_backend import default_answer, stage_of

Answer = Callable[[list[Message]], str | None]


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that went away mid-answer (an app node killed by a test) is expected here, not a failure
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class ScriptedModelServer:
    """`answer(messages)` gives the reply's text; None is a server error (HTTP 500) instead."""

    def __init__(self, answer: Answer = default_answer, *, delay: float = 0.0) -> None:
        self.answer = answer
        self.delay = delay
        self._lock = threading.Lock()
        self.requests: list[list[Message]] = []  # every request's messages, in arrival order
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = [Message(m["role"], m["content"]) for m in request["messages"]]
                with served._lock:
                    served.requests.append(messages)
                if served.delay:
                    time.sleep(served.delay)
                text = served.answer(messages)
                if text is None:
                    self.send_error(500, "scripted failure")
                    return
                body = json.dumps(
                    {
                        "id": "scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request["model"],
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def calls(self) -> int:
        with self._lock:
            return len(self.requests)

    def questions(self) -> Counter[tuple[str, str]]:
        """How often each (stage, user message) was asked: the user message holds the text and this call's data."""
        with self._lock:
            asked = list(self.requests)
        return Counter((stage_of(messages), messages[-1].content) for messages in asked)

    def asked_about(self, fragment: str) -> int:
        """How many requests carried `fragment` in their user message (a record's text, say)."""
        with self._lock:
            return sum(fragment in messages[-1].content for messages in self.requests)

    def environment(self, model: str = "scripted-counting", **extra: str) -> dict[str, str]:
        """The settings that point an app process at this server."""
        return {
            "UNERASE_LLM_BACKEND": "openai",
            "UNERASE_LLM_MODEL": model,
            "UNERASE_LLM_BASE_URL": self.url,
            "UNERASE_LLM_API_KEY": "scripted",
            **extra,
        }

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def scripted_model_server(answer: Answer = default_answer, *, delay: float = 0.0) -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer(answer, delay=delay)
    try:
        yield server
    finally:
        server.close()
