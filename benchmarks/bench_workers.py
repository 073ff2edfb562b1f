"""Benchmark of batch jobs shared by `unerase worker` processes: two workers against one, side by side.

    python benchmarks/bench_workers.py [--rows 600] [--delay 0.2] [--rounds 3] [--concurrency 4] [--database-url URL]

The model is the bottleneck here, as it is in a deployment with a language model: a SCRIPTED stand-in for an
OpenAI-compatible server (tests/support/scripted_server.py, threaded, NOT a model) answers every request after
`--delay` seconds. Each row asks it one question (texts without vocabulary terms: the targeting question), and a
worker has `--concurrency` rows in flight (batch_concurrency and llm_concurrency), so one worker analyses at most
concurrency/delay rows a second and two workers, sharing the job through the database, twice that.

Each round runs both configurations, alternating which goes first: a fresh database (a new schema on PostgreSQL,
or a new SQLite file), N workers started as a deployment starts them (`python -m web.cli worker`, the fixture
vocabulary, own data directories) and running before the job exists, then a job of `--rows` rows stored as a web
node stores an upload. Two times are taken, polling the database every 0.05 s: from storing the job to its
completion (what a user waits; it includes each worker's first look, within POLL_SECONDS), and from the first row
claimed to the completion (the work itself; a second worker's first look may still come up to POLL_SECONDS
after the first's). Medians over the rounds, their ratio, and the load
average beside them: the machine is shared.

PostgreSQL (the deployment this is for) when `--database-url` or UNERASE_TEST_DATABASE_URL names a server, else
SQLite. JSON goes to benchmarks/results/workers.json (not committed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from sqlmodel import col, func, select

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.app_process import AppProcess  # noqa: E402
from tests.support.scripted_server import ScriptedModelServer  # noqa: E402
from tests.support.workers import queue_job, start_worker, texts, worker_settings  # noqa: E402
from web.batch_worker import POLL_SECONDS  # noqa: E402
from web.db import make_engine  # noqa: E402
from web.models import BatchRow  # noqa: E402
from web.store import Store  # noqa: E402

WAIT_SECONDS = 1_800.0


def load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


@contextmanager
def database(url: str | None, directory: Path) -> Iterator[str]:
    if not url:
        yield f"sqlite:///{directory / f'bench-{uuid.uuid4().hex[:8]}.db'}"
        return
    from tests.postgres import fresh_schema_url

    with fresh_schema_url(url) as schema:
        yield schema.url


def one_run(
    workers: int, server: ScriptedModelServer, args: argparse.Namespace, directory: Path, round_: int
) -> dict[str, Any]:
    """N workers, one job: seconds from storing it to completion, and from its first claimed row to completion."""
    with database(args.database_url, directory) as url, ExitStack() as stack:
        concurrency = str(args.concurrency)
        environment = server.environment(
            **worker_settings(url, UNERASE_BATCH_CONCURRENCY=concurrency, UNERASE_LLM_CONCURRENCY=concurrency)
        )
        started: list[AppProcess] = []
        for number in range(workers):
            worker = start_worker(f"r{round_}-n{workers}-w{number}", directory, environment)
            stack.callback(worker.stop)
            started.append(worker)
        engine = make_engine(url)
        stack.callback(engine.dispose)
        store = Store(engine)
        job_id = uuid.uuid4().hex
        calls = server.calls
        queued = time.perf_counter()
        # texts of the round: the workers' answer caches (one per data directory) never hold them
        queue_job(store, job_id, [f"{text} in round {round_}" for text in texts(args.rows)])
        first_claimed: float | None = None
        claimed = select(func.count()).where(BatchRow.job_id == job_id, col(BatchRow.claimed_by).is_not(None))
        deadline = queued + WAIT_SECONDS
        while time.perf_counter() < deadline:
            progress = store.progress(job_id)
            assert progress is not None
            if first_claimed is None:
                with engine.connect() as connection:
                    if connection.execute(claimed).scalar_one():
                        first_claimed = time.perf_counter()
            if progress.status == "complete":
                break
            time.sleep(0.05)
        else:
            raise SystemExit(f"the job did not complete in {WAIT_SECONDS:.0f} s: {store.progress(job_id)}")
        finished = time.perf_counter()
        shares = sorted(
            sum(1 for row in store.iter_rows(job_id) if (row.claimed_by or "").split(":")[1:2] == [str(w.process.pid)])
            for w in started
        )
        assert first_claimed is not None
        return {
            "workers": workers,
            "round": round_,
            "queued_to_complete": finished - queued,
            "claimed_to_complete": finished - first_claimed,
            "rows_per_second": args.rows / (finished - queued),
            "model_calls": server.calls - calls,
            "rows_per_worker": shares,
            "load": load(),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=600)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the scripted server takes per answer")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4, help="rows in flight per worker")
    parser.add_argument("--database-url", default=os.environ.get("UNERASE_TEST_DATABASE_URL", "").strip() or None)
    args = parser.parse_args()
    where = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{args.rows} rows, scripted model server {args.delay} s per call, {args.concurrency} rows in flight per")
    print(f"worker, {where}, workers poll every {POLL_SECONDS} s; load average at start {load()}")
    runs: list[dict[str, Any]] = []
    server = ScriptedModelServer(delay=args.delay)
    try:
        with tempfile.TemporaryDirectory(prefix="unerase-bench-workers-") as tmp:
            for round_ in range(1, args.rounds + 1):
                for workers in (1, 2) if round_ % 2 else (2, 1):
                    run = one_run(workers, server, args, Path(tmp), round_)
                    runs.append(run)
                    print(
                        f"round {round_}, {workers} worker(s): {run['queued_to_complete']:.2f} s queued→complete "
                        f"({run['rows_per_second']:.1f} rows/s), {run['claimed_to_complete']:.2f} s first claim→"
                        f"complete, {run['model_calls']} model calls, rows per worker {run['rows_per_worker']}, "
                        f"load {run['load']}"
                    )
    finally:
        server.close()
    summary: dict[str, Any] = {"rows": args.rows, "delay": args.delay, "database": where, "runs": runs}
    for measure in ("queued_to_complete", "claimed_to_complete"):
        one = statistics.median(r[measure] for r in runs if r["workers"] == 1)
        two = statistics.median(r[measure] for r in runs if r["workers"] == 2)
        ratios = [
            a[measure] / b[measure]
            for a, b in zip([r for r in runs if r["workers"] == 1], [r for r in runs if r["workers"] == 2], strict=True)
        ]
        summary[measure] = {"one": one, "two": two, "speed_up": one / two, "per_round": ratios}
        print(
            f"{measure.replace('_', ' ')}: median {one:.2f} s with one worker, {two:.2f} s with two: "
            f"{one / two:.2f}× (rounds {', '.join(f'{r:.2f}×' for r in ratios)})"
        )
    print(f"load average at the end {load()}")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "workers.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
