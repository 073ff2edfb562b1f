"""Rate limits and failed-login counts: the in-memory and the database implementations pass the same tests
(a real SQLite file and a real PostgreSQL schema); the database's also under concurrent requests and with a node
whose clock runs behind."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine

from web.errors import RateLimited
from web.logins import FailureLog, LoginGuard, MemoryFailures
from web.ratelimit import MemoryBuckets, RateLimiter, TokenBuckets
from web.shared_limits import DatabaseBuckets, DatabaseFailures
from web.statements import AsyncConnections, sqlite_limits, statement_engine

from .support.databases import DATABASES, Clock, app_database

KINDS = ["memory", *DATABASES]
WINDOW = 900.0


@pytest.fixture
def clock() -> Clock:
    return Clock()


@contextmanager
def limits_engine(kind: str, tmp_path: Path) -> Iterator[Engine]:
    """Where the app keeps the limits: a file of their own beside SQLite, the database on PostgreSQL."""
    if kind == "sqlite":
        engine = sqlite_limits(tmp_path / "limits.sqlite")
        yield engine
        engine.dispose()
        return
    with app_database(kind, tmp_path) as database:
        statements = statement_engine(database)
        yield statements
        statements.dispose()


@pytest.fixture(params=DATABASES)
def database_buckets(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[DatabaseBuckets]:
    with limits_engine(request.param, tmp_path) as statements:
        yield DatabaseBuckets(statements, clock=clock)


@pytest.fixture(params=KINDS)
async def buckets(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> AsyncIterator[TokenBuckets]:
    """As the app makes them: a request's check on psycopg's asyncio connections (PostgreSQL), or tried on the
    loop without waiting for the file's lock (SQLite)."""
    if request.param == "memory":
        yield MemoryBuckets(clock=clock)
        return
    with limits_engine(request.param, tmp_path) as statements:
        if request.param == "sqlite":
            nowait = sqlite_limits(tmp_path / "limits.sqlite", wait=False)
            yield DatabaseBuckets(statements, clock=clock, nowait=nowait)
            nowait.dispose()
            return
        fast = AsyncConnections(statements.url)
        yield DatabaseBuckets(statements, clock=clock, fast=fast)
        await fast.aclose()


@pytest.fixture(params=DATABASES)
def database_failures(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[DatabaseFailures]:
    with limits_engine(request.param, tmp_path) as statements:
        yield DatabaseFailures(statements, WINDOW, clock=clock)


@pytest.fixture(params=KINDS)
def failures(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[FailureLog]:
    if request.param == "memory":
        yield MemoryFailures(WINDOW, clock=clock)
        return
    with limits_engine(request.param, tmp_path) as statements:
        yield DatabaseFailures(statements, WINDOW, clock=clock)


async def takes(buckets: TokenBuckets, key: str, per_minute: int, times: int) -> list[float]:
    return [await buckets.take(key, per_minute) for _ in range(times)]


# -- token buckets ------------------------------------------------------------------------------------
async def test_a_burst_of_the_limit_then_the_wait_for_one_token(buckets: TokenBuckets) -> None:
    waits = await takes(buckets, "client", 10, 11)
    assert waits[:10] == [0.0] * 10
    assert waits[10] == pytest.approx(6.0)  # 10 a minute: one token every 6 s


async def test_tokens_come_back_at_the_rate_of_the_limit(buckets: TokenBuckets, clock: Clock) -> None:
    await takes(buckets, "client", 10, 10)
    clock.advance(4.0)
    assert await buckets.take("client", 10) == pytest.approx(2.0)  # a refused request takes nothing
    clock.advance(2.0)
    assert await buckets.take("client", 10) == 0.0
    assert await buckets.take("client", 10) == pytest.approx(6.0)


async def test_an_idle_bucket_fills_up_to_the_limit_and_no_further(buckets: TokenBuckets, clock: Clock) -> None:
    await takes(buckets, "client", 10, 10)
    clock.advance(3600.0)
    waits = await takes(buckets, "client", 10, 11)
    assert waits.count(0.0) == 10 and waits[10] > 0


async def test_each_key_has_its_own_bucket(buckets: TokenBuckets) -> None:
    await takes(buckets, "one", 2, 2)
    assert await buckets.take("one", 2) > 0
    assert await buckets.take("two", 2) == 0.0


async def test_a_lowered_limit_caps_a_fuller_bucket(buckets: TokenBuckets) -> None:
    assert await buckets.take("client", 10) == 0.0  # 9 left under the old limit
    assert await takes(buckets, "client", 2, 3) == [0.0, 0.0, pytest.approx(30.0)]


async def test_the_limiter_says_how_long_to_wait(buckets: TokenBuckets, clock: Clock) -> None:
    limiter = RateLimiter(3, buckets)
    for _ in range(3):
        await limiter.check("10.0.0.1")
    clock.advance(5.5)
    with pytest.raises(RateLimited) as refused:
        await limiter.check("10.0.0.1")
    assert refused.value.headers == {"Retry-After": "15"}  # 20 s a token, 5.5 s of it have passed: 14.5, rounded up
    assert "at most 3 per minute are accepted; try again in 15 s" in refused.value.message
    await RateLimiter(3, buckets, scope="site\x00other").check("10.0.0.1")  # another limit, another bucket
    await RateLimiter(0, buckets).check("10.0.0.1")  # 0: no limit


async def test_a_node_whose_clock_runs_behind_gives_no_tokens(database_buckets: DatabaseBuckets, clock: Clock) -> None:
    await takes(database_buckets, "client", 10, 10)
    clock.advance(-100.0)  # the next request reaches a node 100 s behind
    assert await database_buckets.take("client", 10) > 0
    clock.advance(103.0)  # 3 s after the last token was taken: still half a token short
    assert await database_buckets.take("client", 10) == pytest.approx(3.0)


def test_concurrent_requests_get_exactly_the_limit(database_buckets: DatabaseBuckets) -> None:
    """Many threads (as many requests on several nodes) take at once: the upsert grants exactly the limit."""
    with ThreadPoolExecutor(8) as pool:
        waits = list(pool.map(lambda _: database_buckets.take_now("client", 25), range(80)))
    assert waits.count(0.0) == 25 and all(wait > 0 for wait in waits if wait != 0.0)


def test_idle_buckets_are_purged_and_read_as_full(database_buckets: DatabaseBuckets, clock: Clock) -> None:
    for _ in range(5):
        database_buckets.take_now("idle", 5)
    clock.advance(61.0)
    database_buckets.take_now("busy", 5)
    assert database_buckets.purge() == 1
    with database_buckets.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM rate_bucket")).scalar_one() == 1
    assert [database_buckets.take_now("idle", 5) for _ in range(6)].count(0.0) == 5


def test_keys_are_stored_as_hashes(database_buckets: DatabaseBuckets) -> None:
    database_buckets.take_now("api\x00203.0.113.9", 5)
    with database_buckets.engine.connect() as connection:
        (key,) = connection.execute(text("SELECT key FROM rate_bucket")).scalars()
    assert "203.0.113.9" not in key and len(key) == 32


# -- failed logins ------------------------------------------------------------------------------------
async def test_failures_up_to_the_limit_then_a_wait(failures: FailureLog, clock: Clock) -> None:
    for _ in range(2):
        await failures.add(["client\x001"])
    assert await failures.wait(["client\x001"], 3) == 0.0
    clock.advance(100.0)
    await failures.add(["client\x001"])
    assert await failures.wait(["client\x001"], 3) == pytest.approx(WINDOW - 100.0)  # the oldest ages out first
    clock.advance(WINDOW - 100.0)
    assert await failures.wait(["client\x001"], 3) == 0.0


async def test_the_wait_ends_when_fewer_than_the_limit_remain(failures: FailureLog, clock: Clock) -> None:
    for _ in range(4):  # failures at 0, 100, 200, 300 s; limit 3
        await failures.add(["name\x00max"])
        clock.advance(100.0)
    clock.advance(-100.0)
    # at 300 s: once the failure of 100 s has aged out (at 1000 s) only two remain
    assert await failures.wait(["name\x00max"], 3) == pytest.approx(700.0)


async def test_any_key_at_its_limit_holds_the_login(failures: FailureLog) -> None:
    for _ in range(3):
        await failures.add(["client\x001", "name\x00max"])
    assert await failures.wait(["client\x002", "name\x00max"], 3) > 0  # the name, from another address
    assert await failures.wait(["client\x001", "name\x00zoe"], 3) > 0  # the address, for another name
    assert await failures.wait(["client\x002", "name\x00zoe"], 3) == 0.0


async def test_the_guard_rounds_up_and_a_zero_limit_holds_nothing(failures: FailureLog, clock: Clock) -> None:
    guard = LoginGuard(2, failures)
    await guard.fail("10.0.0.1", "max")
    clock.advance(0.5)
    await guard.fail("10.0.0.1", "max")
    assert await guard.retry_after("10.0.0.1", "max") == 900  # 899.5 s, rounded up
    assert await guard.retry_after("10.0.0.2", "eve") == 0
    assert await LoginGuard(0, failures).retry_after("10.0.0.1", "max") == 0


def test_failures_that_no_longer_count_are_purged(database_failures: DatabaseFailures, clock: Clock) -> None:
    database_failures.add_now(["client\x00old"])
    clock.advance(WINDOW)
    database_failures.add_now(["client\x00new"])
    assert database_failures.purge() == 1
    assert database_failures.wait_now(["client\x00new"], 1) == pytest.approx(WINDOW)


@pytest.mark.postgres
def test_a_connection_the_server_dropped_is_replaced_and_the_check_made(tmp_path: Path) -> None:
    with app_database("postgresql", tmp_path) as database:
        statements = statement_engine(database)
        buckets = DatabaseBuckets(statements)
        with statements.connect() as connection:  # the pool's one connection so far
            backend = connection.execute(text("SELECT pg_backend_pid()")).scalar_one()
        with database.connect() as connection:
            assert connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend}).scalar_one()
        assert buckets.take_now("client", 10) == 0.0
        with statements.connect() as connection:
            assert connection.execute(text("SELECT pg_backend_pid()")).scalar_one() != backend
        statements.dispose()


@pytest.mark.postgres
async def test_a_checks_connection_the_server_dropped_is_replaced_on_the_event_loop(tmp_path: Path) -> None:
    with app_database("postgresql", tmp_path) as database:
        fast = AsyncConnections(database.url, size=1)
        buckets = DatabaseBuckets(database, fast=fast)
        assert await buckets.take("client", 10) == 0.0
        (backend,) = await fast.one("SELECT pg_backend_pid()", {}) or (None,)
        with database.connect() as connection:
            assert connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": backend}).scalar_one()
        assert await buckets.take("client", 10) == 0.0
        assert await fast.one("SELECT pg_backend_pid()", {}) != (backend,)
        await fast.aclose()


async def test_a_check_that_finds_the_sqlite_file_locked_waits_for_it_in_a_thread(tmp_path: Path) -> None:
    path = tmp_path / "limits.sqlite"
    statements, nowait = sqlite_limits(path), sqlite_limits(path, wait=False)
    buckets = DatabaseBuckets(statements, nowait=nowait)
    assert await buckets.take("client", 10) == 0.0  # on the loop
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another worker holds the write lock
    waiting = asyncio.ensure_future(buckets.take("client", 10))
    await asyncio.sleep(0.2)
    assert not waiting.done()  # it waits for the lock instead of failing
    other.execute("COMMIT")
    assert await waiting == 0.0
    other.close()
    statements.dispose()
    nowait.dispose()
