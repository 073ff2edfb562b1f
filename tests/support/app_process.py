"""Real app processes for tests of several nodes sharing one database (issue 18).

Each process is started the way a deployment starts it (`python -m web`, or `python -m web.cli worker` for a
worker), with its own data directory and the settings given as environment variables, on a free port of
127.0.0.1. Startup waits for /healthz; when it fails, the process's output is in the error. `kill()` is a
`kill -9` (the node dies mid-work), `stop()` a polite SIGTERM.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2 as httpx

from tests.support.paths import PROJECT as ROOT

STARTUP_SECONDS = 90.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class AppProcess:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    url: str  # "" for a worker, which serves no HTTP

    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL: nothing is cleaned up, as when a machine dies."""
        if self.alive():
            self.process.kill()
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)

    def client(self, timeout: float = 30.0) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=timeout, trust_env=False)


def start_process(
    name: str,
    directory: Path,
    environment: dict[str, str],
    arguments: Sequence[str] = ("-m", "web"),
    serves_http: bool = True,
) -> AppProcess:
    """Starts one node. `environment` holds its UNERASE_* settings (the database URL above all)."""
    data_dir = directory / name
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port() if serves_http else 0
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("UNERASE_")},
        "UNERASE_DATA_DIR": str(data_dir),
        "UNERASE_HOST": "127.0.0.1",
        "UNERASE_PORT": str(port),
        "UNERASE_EXAMPLES_ENABLED": "false",
        "PYTHONUNBUFFERED": "1",
        **environment,
    }
    log = directory / f"{name}.log"
    handle = log.open("wb")
    process = subprocess.Popen([sys.executable, *arguments], cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT)
    handle.close()
    node = AppProcess(name, process, log, f"http://127.0.0.1:{port}" if serves_http else "")
    if serves_http:
        wait_until_healthy(node)
    return node


def wait_until_healthy(node: AppProcess) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            if not node.alive():
                raise RuntimeError(f"{node.name} exited with {node.process.returncode}:\n{node.output()}")
            try:
                if client.get(f"{node.url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    node.kill()
    raise RuntimeError(f"{node.name} did not answer /healthz within {STARTUP_SECONDS:.0f} s:\n{node.output()}")


@contextmanager
def app_processes(
    directory: Path, environment: dict[str, str], names: Sequence[str] = ("a", "b")
) -> Iterator[list[AppProcess]]:
    """Several web nodes on the same settings (one database), stopped at the end, whatever happened."""
    with ExitStack() as stack:
        nodes = []
        for name in names:
            node = start_process(name, directory, environment)
            stack.callback(node.stop)
            nodes.append(node)
        yield nodes
