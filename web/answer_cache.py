"""The model answers' cache in the app's database, for deployments whose nodes share PostgreSQL.

engine.cache.SQLiteCache keeps answers in a file of the node's data directory, so on several nodes the same
question would be asked once per node. This `engine.cache.ResultCache` keeps them in the shared database
(`llm_answer`: key, expiry, JSON value): a question one node asked is never asked by another. Blocking work
(SQLAlchemy) runs in the thread pool; expired entries are deleted by `purge_expired`, called now and then
(web.upkeep), and never served before that.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Engine
from starlette.concurrency import run_in_threadpool

from web.statements import run_statement

TTL_SECONDS = 7 * 86400  # as engine.cache.SQLiteCache

READ = text("SELECT value FROM llm_answer WHERE key = :key AND expires >= :now")
# two nodes storing the same key at once: the later write wins, and both wrote the same answer
WRITE = text(
    "INSERT INTO llm_answer (key, expires, value) VALUES (:key, :expires, :value) "
    "ON CONFLICT (key) DO UPDATE SET expires = excluded.expires, value = excluded.value"
)
PURGE = text("DELETE FROM llm_answer WHERE expires < :now")


class DatabaseCache:
    """`engine`: the autocommit engine for single statements (web.statements)."""

    def __init__(self, engine: Engine, ttl: float = TTL_SECONDS, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.ttl = ttl
        self.clock = clock

    def get_now(self, key: str) -> dict[str, Any] | None:
        values = {"key": key, "now": self.clock()}
        stored = run_statement(self.engine, lambda c: c.execute(READ, values).scalar_one_or_none())
        if stored is None:
            return None
        answer: dict[str, Any] = json.loads(stored)
        return answer

    def set_now(self, key: str, value: dict[str, Any]) -> None:
        values = {"key": key, "expires": self.clock() + self.ttl, "value": json.dumps(value, ensure_ascii=False)}
        run_statement(self.engine, lambda c: c.execute(WRITE, values))

    async def get(self, key: str) -> dict[str, Any] | None:
        answer: dict[str, Any] | None = await run_in_threadpool(self.get_now, key)
        return answer

    async def set(self, key: str, value: dict[str, Any]) -> None:
        await run_in_threadpool(self.set_now, key, value)

    def purge_expired(self) -> int:
        return int(run_statement(self.engine, lambda c: c.execute(PURGE, {"now": self.clock()}).rowcount))

    def close(self) -> None:
        """Nothing of its own to close: the engine belongs to the services that made it."""
