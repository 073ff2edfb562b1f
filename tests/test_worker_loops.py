"""The background loops' runner (web/worker.py) that the web app and `unerase worker` share: stopping, a loop that
does not stop in time, a loop that fails. The loops here are small scripted stand-ins for the batch worker (real
workers are in tests/test_batch_workers.py)."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from web import worker
from web.batch_worker import BatchWorker
from web.worker import Background

from .support.batches import csv_upload, upload
from .webapp import client


class Polite:
    """Stops when asked, after finishing the piece of work in hand."""

    def __init__(self) -> None:
        self._stop = asyncio.Event()
        self.finished_cleanly = False

    async def run(self) -> None:
        await self._stop.wait()
        await asyncio.sleep(0.01)  # the work in hand
        self.finished_cleanly = True

    def stop(self) -> None:
        self._stop.set()


class Deaf:
    """Never stops by itself: it is cancelled, and says so."""

    def __init__(self) -> None:
        self.cancelled = False

    async def run(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise

    def stop(self) -> None:
        pass


class Broken:
    async def run(self) -> None:
        raise RuntimeError("the database schema is from the future")

    def stop(self) -> None:
        pass


async def test_stopping_lets_polite_loops_finish_and_cancels_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(worker, "STOP_SECONDS", 0.2)
    polite, deaf = Polite(), Deaf()
    background = Background([polite, deaf])
    background.start()
    stop = asyncio.Event()
    stop.set()
    assert await background.until(stop) is False  # stopped from outside, nothing ended by itself
    await background.stop()
    assert polite.finished_cleanly and deaf.cancelled


async def test_a_failing_loop_ends_the_wait_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    polite = Polite()
    background = Background([polite, Broken()])
    with caplog.at_level(logging.ERROR, logger="unerase.worker"):
        background.start()
        assert await background.until(asyncio.Event()) is True  # `unerase worker` then exits with 1
        await background.stop()
    assert polite.finished_cleanly
    assert "background loop Broken failed" in caplog.text and "from the future" in caplog.text


def test_the_app_runs_the_batch_worker_only_with_run_jobs(tmp_path: Path) -> None:
    with client(tmp_path / "jobs") as api:
        assert [type(loop) for loop in api.app.state.background.loops] == [BatchWorker]  # type: ignore[attr-defined]
    with client(tmp_path / "web", run_jobs=False) as api:
        assert api.app.state.background.loops == []  # type: ignore[attr-defined]
        # an upload is stored and waits for the workers of other processes
        response = upload(api, "records.csv", csv_upload(5), text_column="body")
        assert response.status_code == 202 and response.json()["status"] == "queued", response.text
