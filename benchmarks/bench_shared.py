"""What the state shared by several processes costs per request: one rate-limit check, one failed-login check,
one cached model answer, one read of the change feed.

    python benchmarks/bench_shared.py [--checks 3000] [--rounds 5]

Each figure is the median wall time of one call and this process's CPU time per call, measured side by side in
one run (the implementations take turns in every round): in memory (one process, today's default), in a SQLite
file of the app's schema (several workers of one machine) and, when UNERASE_TEST_DATABASE_URL names a server, in a
throwaway PostgreSQL schema. Calls are timed as the app makes them: the blocking statement alone, and the
coroutine a request awaits (which adds the hop to the thread pool). For PostgreSQL the bucket's check is also
timed on psycopg's asyncio connections (what the app uses there), and on the app's own engine (pre-ping on
checkout, BEGIN/COMMIT around it), which web/statements.py avoids; for SQLite as the app makes it, on the event
loop without waiting for the limits file's lock. Results are printed and written to
benchmarks/results/shared-<date>.json (not committed). Nothing is asserted: this is a measurement, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy.engine import Engine  # noqa: E402

from web.answer_cache import DatabaseCache  # noqa: E402
from web.changes import ChangeFeed  # noqa: E402
from web.db import make_engine  # noqa: E402
from web.logins import MemoryFailures  # noqa: E402
from web.ratelimit import MemoryBuckets  # noqa: E402
from web.shared_limits import DatabaseBuckets, DatabaseFailures  # noqa: E402
from web.statements import AsyncConnections, sqlite_limits, statement_engine  # noqa: E402

PER_MINUTE = 1_000_000_000  # every check takes a token and none is refused: the path of an accepted request
ANSWER = {"verdict": "contentious", "explanation": "Here the word is used as an insult against a group.", "model": "m"}


@contextmanager
def databases(workdir: Path) -> Iterator[list[tuple[str, Engine]]]:
    """The app's schema in SQLite, and in a throwaway PostgreSQL schema when a server is configured."""
    found = [("sqlite", make_engine(f"sqlite:///{workdir / 'unerase.db'}"))]
    url = os.environ.get("UNERASE_TEST_DATABASE_URL", "").strip()
    if not url:
        print("UNERASE_TEST_DATABASE_URL is not set: PostgreSQL is left out")
        yield found
        found[0][1].dispose()
        return
    from tests.postgres import fresh_schema_url

    with fresh_schema_url(url) as schema:
        found.append(("postgresql", make_engine(schema.url)))
        yield found
        for _, engine in found:
            engine.dispose()


ENGINES: list[Engine] = []  # the statements' engines, disposed at the end
POOLS: list[AsyncConnections] = []  # closed at the end, on the loop that opened them
CPU: dict[int, float] = {}  # id of a sample list -> CPU seconds its calls took


def timed(call: Callable[[], Any], times: int) -> list[float]:
    samples, cpu = [], time.process_time()
    for _ in range(times):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    CPU[id(samples)] = time.process_time() - cpu
    return samples


async def timed_async(call: Callable[[], Awaitable[Any]], times: int) -> list[float]:
    samples, cpu = [], time.process_time()
    for _ in range(times):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    CPU[id(samples)] = time.process_time() - cpu
    return samples


def cases(engines: list[tuple[str, Engine]]) -> dict[str, tuple[str, Callable[[int], Any]]]:
    """name -> (kind, run(times) giving samples); "sync" runs are blocking calls, "async" ones coroutines."""
    found: dict[str, tuple[str, Callable[[int], Any]]] = {}
    memory, failures = MemoryBuckets(), MemoryFailures()
    found["bucket, memory"] = ("async", lambda n: timed_async(lambda: memory.take("k", PER_MINUTE), n))
    found["login check, memory"] = ("async", lambda n: timed_async(lambda: failures.wait(["c", "n"], 10), n))
    counter = iter(range(10**9))
    for name, database in engines:
        # the answers on SQLite stay in llm-cache.sqlite in the app; timed here in the app's schema for comparison
        cache = DatabaseCache(statement_engine(database))
        ENGINES.append(cache.engine)
        if name == "sqlite":  # the limits of several SQLite workers are in a file of their own
            limits = Path(str(database.url.database)).with_name("limits.sqlite")
            statements, nowait = sqlite_limits(limits), sqlite_limits(limits, wait=False)
            ENGINES.extend((statements, nowait))
            inline = DatabaseBuckets(statements, nowait=nowait)
            found["bucket, sqlite: on the loop, not waiting for the lock"] = (
                "async",
                lambda n, b=inline: timed_async(lambda: b.take("k", PER_MINUTE), n),
            )
        else:
            statements = cache.engine
        buckets, logins = DatabaseBuckets(statements), DatabaseFailures(statements)
        cache.set_now("hit", ANSWER)
        logins.add_now(["c", "n"])
        feed = ChangeFeed(database)
        feed.start()
        found[f"bucket, {name}: statement"] = (
            "sync",
            lambda n, b=buckets: timed(lambda: b.take_now("k", PER_MINUTE), n),
        )
        found[f"bucket, {name}: awaited"] = (
            "async",
            lambda n, b=buckets: timed_async(lambda: b.take("k", PER_MINUTE), n),
        )
        if name != "sqlite":
            POOLS.append(AsyncConnections(database.url))
            fast = DatabaseBuckets(statements, fast=POOLS[-1])  # what the app uses here
            found[f"bucket, {name}: awaited on the loop (psycopg)"] = (
                "async",
                lambda n, b=fast: timed_async(lambda: b.take("k", PER_MINUTE), n),
            )
            plain = DatabaseBuckets(database)  # the app's engine: pre-ping, a transaction around the statement
            found[f"bucket, {name}: app engine"] = (
                "sync",
                lambda n, b=plain: timed(lambda: b.take_now("k", PER_MINUTE), n),
            )
        found[f"login check, {name}: awaited"] = (
            "async",
            lambda n, f=logins: timed_async(lambda: f.wait(["c", "n"], 10), n),
        )
        found[f"cached answer, {name}: awaited"] = ("async", lambda n, c=cache: timed_async(lambda: c.get("hit"), n))
        found[f"answer stored, {name}: awaited"] = (
            "async",
            lambda n, c=cache: timed_async(lambda: c.set(f"k{next(counter)}", ANSWER), n),
        )
        found[f"change feed read, {name}"] = ("sync", lambda n, f=feed: timed(f.read, n))
    return found


async def measure(engines: list[tuple[str, Engine]], checks: int, rounds: int) -> dict[str, dict[str, float]]:
    runs = cases(engines)
    samples: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, float] = dict.fromkeys(runs, 0.0)
    for round_ in range(rounds + 1):  # the first round warms up (connections, prepared statements)
        order = list(runs.items())
        for name, (kind, run) in order if round_ % 2 == 0 else reversed(order):
            got = await run(checks) if kind == "async" else run(checks)
            if round_ > 0:
                samples[name] += got
                cpu[name] += CPU.pop(id(got))
    for pool in POOLS:
        await pool.aclose()
    for engine in ENGINES:
        engine.dispose()
    return {
        name: {
            "median_us": statistics.median(values) * 1e6,
            "p99_us": statistics.quantiles(values, n=100)[98] * 1e6,
            "cpu_us": cpu[name] / len(values) * 1e6,
            "calls": len(values),
        }
        for name, values in samples.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checks", type=int, default=3000, help="calls per case and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds after a warm-up round")
    parser.add_argument("--json", type=Path, help="default benchmarks/results/shared-<date>.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, databases(Path(tmp)) as engines:
        results = asyncio.run(measure(engines, args.checks, args.rounds))
    load = os.getloadavg()[0]
    print(f"\none call in µs ({args.rounds} rounds of {args.checks} calls; load average {load:.2f})")
    print(f"  {'':<54} {'median':>9} {'p99':>9} {'CPU':>9}")
    for name, figures in results.items():
        print(f"  {name:<54} {figures['median_us']:9.1f} {figures['p99_us']:9.1f} {figures['cpu_us']:9.1f}")
    path = args.json or ROOT / "benchmarks" / "results" / f"shared-{time.strftime('%Y-%m-%d')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(), **results}, indent=2))
    print(f"\nresults written to {path}")


if __name__ == "__main__":
    main()
