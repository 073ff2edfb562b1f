"""The model answers' cache in the app's database (PostgreSQL deployments), on a real SQLite file and a real
PostgreSQL schema; and which cache, limits and counts a process chooses for its database."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from engine.cache import SQLiteCache, cache_key
from web.answer_cache import DatabaseCache
from web.db import make_engine
from web.logins import MemoryFailures
from web.ratelimit import MemoryBuckets
from web.settings import Settings
from web.shared import SharedState
from web.shared_limits import DatabaseBuckets, DatabaseFailures
from web.statements import statement_engine

from .postgres import database_url_or_skip, fresh_schema_url
from .support.databases import DATABASES, Clock, app_database

ANSWER = {"verdict": "contentious", "explanation": "Εδώ η λέξη χρησιμοποιείται ως προσβολή.", "model": "m"}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=DATABASES)
def cache(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[DatabaseCache]:
    with app_database(request.param, tmp_path) as database:
        statements = statement_engine(database)
        yield DatabaseCache(statements, ttl=3600.0, clock=clock)
        statements.dispose()


async def test_an_answer_is_kept_until_it_expires(cache: DatabaseCache, clock: Clock) -> None:
    key = cache_key("disambiguation", "a text", "term", "vocabulary", "prompts", "model")
    assert await cache.get(key) is None
    await cache.set(key, ANSWER)
    assert await cache.get(key) == ANSWER
    clock.advance(3600.0)
    assert await cache.get(key) == ANSWER  # still valid at its expiry
    clock.advance(1.0)
    assert await cache.get(key) is None


async def test_a_second_answer_for_a_key_replaces_the_first_and_its_expiry(cache: DatabaseCache, clock: Clock) -> None:
    await cache.set("k", {"verdict": "neutral"})
    clock.advance(3000.0)
    await cache.set("k", ANSWER)
    clock.advance(3000.0)
    assert await cache.get("k") == ANSWER


def test_expired_answers_are_purged(cache: DatabaseCache, clock: Clock) -> None:
    cache.set_now("old", ANSWER)
    clock.advance(3000.0)
    cache.set_now("new", ANSWER)
    clock.advance(1000.0)
    assert cache.purge_expired() == 1
    with cache.engine.connect() as connection:
        assert connection.execute(text("SELECT key FROM llm_answer")).scalars().all() == ["new"]


def test_a_lone_sqlite_process_keeps_everything_in_memory_and_its_data_directory(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, workers=1)
    database = make_engine(settings.resolved_database_url)
    shared = SharedState.choose(settings, database)
    assert isinstance(shared.buckets, MemoryBuckets) and isinstance(shared.failures, MemoryFailures)
    assert isinstance(shared.cache, SQLiteCache) and shared.cache.path == tmp_path / "llm-cache.sqlite"
    assert shared.statements is None
    shared.close()
    database.dispose()


def test_sqlite_workers_count_limits_in_the_database_and_share_the_answer_file(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, workers=2)
    database = make_engine(settings.resolved_database_url)
    shared = SharedState.choose(settings, database)
    assert isinstance(shared.buckets, DatabaseBuckets) and isinstance(shared.failures, DatabaseFailures)
    assert isinstance(shared.cache, SQLiteCache)  # the workers of one machine share the data directory
    assert (tmp_path / "limits.sqlite").exists()  # the limits in a file of their own, not in the app's database
    shared.close()
    database.dispose()


@pytest.mark.postgres
def test_postgresql_nodes_share_limits_and_answers_in_the_database(tmp_path: Path) -> None:
    with fresh_schema_url(database_url_or_skip()) as schema:
        settings = Settings(data_dir=tmp_path, database_url=schema.url, workers=1)
        database = make_engine(schema.url)
        shared = SharedState.choose(settings, database)
        assert isinstance(shared.buckets, DatabaseBuckets) and isinstance(shared.failures, DatabaseFailures)
        assert isinstance(shared.cache, DatabaseCache)
        assert not (tmp_path / "llm-cache.sqlite").exists()
        shared.close()
        database.dispose()
