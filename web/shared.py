"""What the processes sharing one database must share, and where each process keeps it.

On PostgreSQL (any number of nodes) and on SQLite with `workers` > 1, several processes answer the same
clients. Kept in each process's memory, the per-client rate limits and failed-login counts would be multiplied
by the number of processes, and on PostgreSQL (nodes on several machines, each with its own data directory)
the model answers would be asked once per node. `SharedState.choose` keeps them in the database then
(web/shared_limits.py, web/answer_cache.py; with SQLite the limits go to a file of their own in the data
directory the workers share, and the answers stay in its `llm-cache.sqlite`), and in memory for a lone process,
which pays nothing for it. What changes under a process's caches (a moderator's decision,
a site's settings) travels through the change feed (web/changes.py) in every configuration.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from sqlalchemy.engine import Engine

from engine.cache import SQLiteCache
from web.answer_cache import DatabaseCache
from web.logins import FailureLog, MemoryFailures
from web.ratelimit import MemoryBuckets, TokenBuckets
from web.settings import Settings
from web.shared_limits import DatabaseBuckets, DatabaseFailures
from web.statements import AsyncConnections, sqlite_limits, statement_engine
from web.upkeep import HOURLY, OFTEN, Purge


def shares_state(settings: Settings, database: Engine) -> bool:
    """Whether other processes may use this database: always on a server, on SQLite when `workers` > 1 (a
    server started some other way with several workers must set `workers` too)."""
    return database.dialect.name != "sqlite" or settings.workers > 1


@dataclass(frozen=True)
class SharedState:
    """Where this process keeps what other processes must see too: in the database when it is shared (with SQLite
    in a file of the data directory; `statements` is then the engine for single statements), in memory otherwise."""

    buckets: TokenBuckets
    failures: FailureLog
    cache: SQLiteCache | DatabaseCache
    statements: Engine | None = None
    fast: AsyncConnections | None = None  # PostgreSQL: the buckets' connections on the event loop
    nowait: Engine | None = None  # SQLite: the limits' file for checks that must not wait

    @classmethod
    def choose(cls, settings: Settings, database: Engine) -> SharedState:
        if not shares_state(settings, database):
            return cls(MemoryBuckets(), MemoryFailures(), SQLiteCache(settings.data_dir / "llm-cache.sqlite"))
        if database.dialect.name == "sqlite":
            # the workers of one machine share the data directory: its answer cache, and a file for the limits
            limits = settings.data_dir / "limits.sqlite"
            statements, nowait = sqlite_limits(limits), sqlite_limits(limits, wait=False)
            buckets = DatabaseBuckets(statements, nowait=nowait)
            cache = SQLiteCache(settings.data_dir / "llm-cache.sqlite")
            return cls(buckets, DatabaseFailures(statements), cache, statements, nowait=nowait)
        statements = statement_engine(database)
        fast = AsyncConnections(database.url)
        buckets = DatabaseBuckets(statements, fast=fast)
        return cls(buckets, DatabaseFailures(statements), DatabaseCache(statements), statements, fast)

    def purges(self) -> list[tuple[Purge, float]]:
        """What web.upkeep deletes now and then, and how often."""
        found: list[tuple[Purge, float]] = [(self.cache.purge_expired, HOURLY)]
        for part in (self.buckets, self.failures):
            if isinstance(part, DatabaseBuckets | DatabaseFailures):
                found.append((part.purge, OFTEN))
        return found

    async def aclose(self) -> None:
        """Closes the connections and files it opened (on the event loop that used them, then in a thread)."""
        try:
            if self.fast is not None:
                await self.fast.aclose()
        finally:
            await asyncio.to_thread(self.close)

    def close(self) -> None:
        self.cache.close()
        for engine in (self.statements, self.nowait):
            if engine is not None:
                engine.dispose()
