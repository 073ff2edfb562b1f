"""`unerase worker` processes for tests, and the batch jobs they share: started like a deployment starts them, each
with its own data directory, the settings as environment variables."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from tests.support.app_process import STARTUP_SECONDS, AppProcess, start_process
from tests.support.paths import FIXTURES
from web.models import BatchJob, BatchRow
from web.store import Store

WORKER = ("-m", "web.cli", "worker")


def worker_settings(database_url: str, **extra: str) -> dict[str, str]:
    """A node on the fixture vocabulary (quick to load) and the given database."""
    return {
        "UNERASE_DATABASE_URL": database_url,
        "UNERASE_VOCABULARIES": json.dumps([str(FIXTURES / "vocab")]),
        **extra,
    }


def start_worker(name: str, directory: Path, environment: dict[str, str]) -> AppProcess:
    """A worker that has built its services and started its loops (it says so in its log)."""
    worker = start_process(name, directory, environment, arguments=WORKER, serves_http=False)
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:  # bounded
        if " started: batch jobs" in worker.output():
            return worker
        if not worker.alive():
            break
        time.sleep(0.1)
    worker.kill()
    raise RuntimeError(f"worker {name} did not start:\n{worker.output()}")


def texts(count: int) -> list[str]:
    """Different texts of equal length without vocabulary terms: none contains another, so a model request
    carrying one names exactly one row, and each asks the model one question (the targeting one)."""
    return [f"note {number:05d} about the garden, the weather and the long walk home" for number in range(count)]


def queue_job(store: Store, job_id: str, items: Iterable[str]) -> None:
    """A job stored as a web node stores an upload (all rows in one transaction), in English."""
    rows = (
        BatchRow(job_id=job_id, line=line, record_id=f"rec-{line}", text=text, language="en")
        for line, text in enumerate(items, start=1)
    )
    store.create_job(BatchJob(id=job_id, filename="notes.csv", format="csv", language="en"), rows)


def owned_by(process: AppProcess, owner: str | None) -> bool:
    """Whether a claim owner (Services.node: host:pid:random) is this process."""
    return owner is not None and owner.split(":")[1] == str(process.process.pid)
