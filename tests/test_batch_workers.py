"""Several workers sharing batch jobs through one database (issue 18): real `unerase worker` processes, a real
PostgreSQL server (SQLite where a test says so), and a SCRIPTED stand-in for the model server
(tests/support/scripted_server.py) that counts what it is asked. Every row's text reaches "the model" in its own
request, so the counts say how often each row was analysed.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from engine.analysis import BackendRouter
from web.batch_worker import CHUNK_ROUNDS, BatchWorker
from web.batches import export
from web.db import make_engine
from web.models import BatchRow
from web.services import Services
from web.store import Store

from .postgres import database_url_or_skip, fresh_schema_url
from .support.app_process import AppProcess, start_process
from .support.scripted_backend import ScriptedLLMBackend
from .support.scripted_server import ScriptedModelServer, scripted_model_server
from .support.workers import owned_by, queue_job, start_worker, texts, worker_settings
from .webapp import settings

WAIT_SECONDS = 300.0  # the longest any wait below lasts: the machine is shared, and a loaded one is slow


@contextmanager
def database(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
        return
    with fresh_schema_url(database_url_or_skip()) as schema:
        yield schema.url


def rows_of(store: Store, job_id: str) -> list[BatchRow]:
    return list(store.iter_rows(job_id))


def wait_until_complete(store: Store, job_id: str, workers: list[AppProcess]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:  # bounded
        job = store.job(job_id)
        if job is not None and job.status == "complete":
            return
        time.sleep(0.2)
    logs = "\n".join(f"--- {w.name}:\n{w.output()[-3000:]}" for w in workers)
    raise AssertionError(f"job {job_id} did not complete within {WAIT_SECONDS:.0f} s: {store.progress(job_id)}\n{logs}")


def times_asked(server: ScriptedModelServer, items: list[str]) -> Counter[str]:
    """How many requests carried each of `items` (tests.support.workers.texts: each names one row)."""
    known = set(items)
    pattern = re.compile(re.escape(items[0]).replace("00000", r"\d{5}"))
    return Counter(
        found for messages in list(server.requests) for found in pattern.findall(messages[-1].content) if found in known
    )


# -- one process, in-process worker objects ---------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
async def test_a_stopping_worker_finishes_the_rows_it_started_and_releases_the_rest(kind: str, tmp_path: Path) -> None:
    backend = ScriptedLLMBackend(delay=0.3)  # a scripted backend, not a model: slow enough to stop it midway
    items = texts(24)
    with database(kind, tmp_path) as url:
        config = settings(tmp_path, database_url=url, batch_concurrency=2, lease_seconds=60.0)
        services = await asyncio.to_thread(Services.build, config, BackendRouter(default=backend))
        store = services.store
        try:
            await asyncio.to_thread(queue_job, store, "j1", items)
            first = BatchWorker(services)
            running = asyncio.create_task(first.run())
            for _ in range(1_200):  # bounded: until two rows are written
                progress = await asyncio.to_thread(store.progress, "j1")
                if progress is not None and progress.done >= 2:
                    break
                await asyncio.sleep(0.05)
            first.stop()
            await asyncio.wait_for(running, WAIT_SECONDS)
            rows = await asyncio.to_thread(rows_of, store, "j1")
            done = [row for row in rows if row.status == "done"]
            left = [row for row in rows if row.status == "pending"]
            assert done and left  # stopped midway
            assert all(row.claimed_by is None and row.lease_until is None for row in left)  # released, not held
            # every row it had started finished and was written; none was cut off
            assert backend.cancelled == 0 and backend.started == backend.finished == len(done)

            second = BatchWorker(services)  # takes the released rows at once (no lease to wait for)
            running = asyncio.create_task(second.run())
            for _ in range(6_000):  # bounded
                job = await asyncio.to_thread(store.job, "j1")
                if job is not None and job.status == "complete":
                    break
                await asyncio.sleep(0.05)
            second.stop()
            await asyncio.wait_for(running, WAIT_SECONDS)
            assert (await asyncio.to_thread(store.progress, "j1")).to_dict()["analysed"] == 24  # type: ignore[union-attr]
            assert backend.started == 24  # no row was analysed twice
        finally:
            await services.runs.shutdown()
            await services.aclose()


# -- real worker processes -------------------------------------------------------------------------------------
def test_a_worker_process_stops_on_sigterm_writing_what_it_started(tmp_path: Path) -> None:
    """SQLite: every process with run_jobs works on jobs, also on one machine's database file."""
    items = texts(40)
    with scripted_model_server(delay=0.3) as server, database("sqlite", tmp_path) as url:
        engine = make_engine(url)
        store = Store(engine)
        queue_job(store, "j1", items)
        worker = start_worker("w", tmp_path, server.environment(**worker_settings(url, UNERASE_BATCH_CONCURRENCY="2")))
        try:
            deadline = time.monotonic() + WAIT_SECONDS
            while time.monotonic() < deadline and (store.progress("j1").done < 4):  # type: ignore[union-attr]
                time.sleep(0.05)
            worker.process.send_signal(signal.SIGTERM)
            assert worker.process.wait(timeout=WAIT_SECONDS) == 0, worker.output()
        finally:
            worker.kill()
        rows = rows_of(store, "j1")
        engine.dispose()
    done = {row.text for row in rows if row.status == "done"}
    assert 4 <= len(done) < 40
    assert not [row for row in rows if row.status == "pending" and row.claimed_by is not None]  # all released
    asked = times_asked(server, items)
    assert set(asked) == done and set(asked.values()) == {1}  # what was asked was written, once
    assert "stopped" in worker.output()


@pytest.mark.postgres
def test_two_workers_share_a_job_queued_on_a_web_node_and_no_row_is_analysed_twice(tmp_path: Path) -> None:
    items = texts(1_000)
    csv = "ref;body\n" + "".join(f"rec-{n};{text}\n" for n, text in enumerate(items))
    with scripted_model_server(delay=0.02) as server, database("postgresql", tmp_path) as url:
        common = server.environment(**worker_settings(url, UNERASE_BATCH_CONCURRENCY="4"))
        workers = [start_worker(name, tmp_path, common) for name in ("a", "b")]
        web = start_process("web", tmp_path, {**common, "UNERASE_RUN_JOBS": "false"})
        engine = make_engine(url)
        store = Store(engine)
        try:
            with web.client() as api:
                response = api.post(
                    "/api/v1/batches",
                    files={"file": ("notes.csv", csv.encode())},
                    data={"text_column": "body", "id_column": "ref", "lang": "en"},
                )
                assert response.status_code == 202, response.text
                job_id = response.json()["id"]
                wait_until_complete(store, job_id, [*workers, web])
                lines = api.get(f"/api/v1/batches/{job_id}/results.jsonl").text.splitlines()
                progress = api.get(f"/api/v1/batches/{job_id}").json()
            rows = rows_of(store, job_id)
        finally:
            for node in (*workers, web):
                node.stop()
            engine.dispose()
    assert (progress["processed"], progress["analysed"], progress["errors"]) == (1_000, 1_000, 0)
    assert sorted(json.loads(line)["id"] for line in lines) == sorted(f"rec-{n}" for n in range(1_000))
    shares = Counter("a" if owned_by(workers[0], r.claimed_by) else "b" if owned_by(workers[1], r.claimed_by) else "?"
                     for r in rows)  # fmt: skip
    assert set(shares) == {"a", "b"} and shares["a"] + shares["b"] == 1_000  # both worked; the web node did not
    asked = times_asked(server, items)
    assert len(asked) == 1_000 and set(asked.values()) == {1}  # every row reached the model exactly once


@pytest.mark.postgres
def test_a_killed_worker_costs_at_most_the_rows_it_held(tmp_path: Path) -> None:
    """kill -9 of one of two workers midway. The bound: a text reaches the model twice only if its row was held by
    the killed worker when it died (claimed, not yet written: the worker may have asked about it already, and the
    survivor asks again once the lease has passed), and a worker holds one chunk at a time, so at most
    batch_concurrency × CHUNK_ROUNDS rows are analysed twice. Every other row is asked about exactly once."""
    items = texts(1_000)
    lease = 5.0
    with scripted_model_server(delay=0.05) as server, database("postgresql", tmp_path) as url:
        engine = make_engine(url)
        store = Store(engine)
        settings_ = worker_settings(url, UNERASE_BATCH_CONCURRENCY="4", UNERASE_LEASE_SECONDS=str(lease))
        common = server.environment(**settings_)
        survivor, victim = start_worker("survivor", tmp_path, common), start_worker("victim", tmp_path, common)
        queue_job(store, "j1", items)  # once both are running, so that both share it from the start
        try:
            held = kill_while_holding_rows(store, victim, written=150)
            wait_until_complete(store, "j1", [survivor, victim])
            rows = {row.id or 0: row for row in rows_of(store, "j1")}
            results = list(export(store, "j1"))
            progress = store.progress("j1")
        finally:
            survivor.stop()
            victim.kill()
            engine.dispose()
    assert 0 < len(held) <= 4 * CHUNK_ROUNDS
    assert all(rows[row_id].status == "done" and owned_by(survivor, rows[row_id].claimed_by) for row_id in held)
    assert sorted(result["id"] for result in results) == sorted(f"rec-{n}" for n in range(1, 1_001))
    assert progress is not None and (progress.processed, progress.done, progress.status) == (1_000, 1_000, "complete")
    asked = times_asked(server, items)
    assert set(asked) == set(items) and max(asked.values()) <= 2  # every row analysed, none more than twice
    twice = {text for text, count in asked.items() if count == 2}
    assert twice <= {rows[row_id].text for row_id in held}, (twice, held)


def kill_while_holding_rows(store: Store, victim: AppProcess, written: int) -> set[int]:
    """Once the victim has written `written` rows: freeze it (SIGSTOP, so what it holds stops changing), and if it
    holds rows, kill -9 it; otherwise let it go on and look again. Returns the ids of the rows it held."""

    def mine() -> tuple[int, set[int]]:
        rows = [row for row in store.iter_rows("j1") if owned_by(victim, row.claimed_by)]
        return sum(row.status == "done" for row in rows), {row.id or 0 for row in rows if row.status == "pending"}

    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline:  # bounded
        if mine()[0] >= written:
            os.kill(victim.process.pid, signal.SIGSTOP)
            time.sleep(0.2)  # a statement already sent is finished by the server, not left half-way
            if mine()[1]:
                victim.kill()
                return mine()[1]  # read again once it is dead: the bound is what it held when it died
            os.kill(victim.process.pid, signal.SIGCONT)
        time.sleep(0.05)
    raise AssertionError(f"the victim never held rows after writing {written}:\n{victim.output()}")
