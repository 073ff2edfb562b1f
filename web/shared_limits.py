"""Rate limits and failed-login counts kept in the database, for processes that share one (web/shared.py).

A limit counted in each process's memory would let a client do N times what it may on N nodes; these classes
keep the counts in the shared database instead.

- Each check of a token bucket is one statement: an upsert that refills the bucket, takes a token if there is
  one and returns what is left, atomically (SQLite >= 3.35 and PostgreSQL both have `INSERT ... ON CONFLICT DO
  UPDATE ... RETURNING`; PostgreSQL writes LEAST/GREATEST where SQLite has two-argument min/max).
- The statements run on the autocommit engines of web.statements: one round trip each. The check every request
  makes stays off the thread pool (a hop there and back cost a request about 2 ms of CPU on a loaded machine):
  on PostgreSQL it runs on psycopg's asyncio connections (`fast`); on SQLite, in a file of its own, it is tried
  on the event loop without waiting for a lock (`nowait`, about 0.1 ms) and only when the file is locked
  waits for it in a thread.
- The clock is each node's wall clock (`time.time`): nodes must be NTP-synchronised. A node whose clock runs
  s seconds ahead gives a client at most s × rate extra tokens once; one that runs behind gives none (elapsed
  time never counts below zero, and a bucket's time never goes back).
- Keys are hashes (BLAKE2b, 128 bits) of the limit's scope and the client address or user name: the table
  holds no addresses, nor the names people type at the login form (sometimes a password).
- Idle rows are purged (`purge`, called now and then by web.upkeep): a bucket idle for 60 s is full, whatever
  its limit, and a failure older than the window no longer counts.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import OperationalError
from starlette.concurrency import run_in_threadpool

from web.logins import WINDOW_SECONDS
from web.statements import AsyncConnections, psycopg_style, run_statement

FULL_AFTER_SECONDS = 60.0  # a bucket refills `per_minute` tokens a minute: idle this long, it is full

TAKE = """
INSERT INTO rate_bucket (key, tokens, updated, granted) VALUES (:key, :capacity - 1, :now, TRUE)
ON CONFLICT (key) DO UPDATE SET
    tokens = {refilled} - CASE WHEN {refilled} >= 1 THEN 1 ELSE 0 END,
    granted = {refilled} >= 1,
    updated = {greatest}(rate_bucket.updated, :now)
RETURNING tokens, granted
"""
REFILLED = "{least}(:capacity, rate_bucket.tokens + {greatest}(:now - rate_bucket.updated, 0) * :rate)"

# the failure whose ageing out brings the key below the limit: the limit-th newest inside the window
LIMITING_FAILURE = text(
    "SELECT at FROM login_failure WHERE key = :key AND at > :since ORDER BY at DESC LIMIT 1 OFFSET :offset"
)


def hashed(key: str) -> str:
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def _take_statement(dialect: str) -> Any:
    least, greatest = ("min", "max") if dialect == "sqlite" else ("LEAST", "GREATEST")
    refilled = REFILLED.format(least=least, greatest=greatest)
    return text(TAKE.format(refilled=refilled, greatest=greatest))


class DatabaseBuckets:
    """web.ratelimit.TokenBuckets in the `rate_bucket` table: `take` on `fast` connections when given (PostgreSQL),
    else in the thread pool; `take_now` blocks."""

    def __init__(
        self,
        engine: Engine,
        clock: Callable[[], float] = time.time,
        fast: AsyncConnections | None = None,
        nowait: Engine | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.fast = fast
        self.nowait = nowait
        self._take = _take_statement(engine.dialect.name)
        self._take_fast = psycopg_style(self._take.text)

    def _values(self, key: str, per_minute: int) -> dict[str, Any]:
        return {"key": hashed(key), "capacity": float(per_minute), "rate": per_minute / 60.0, "now": self.clock()}

    @staticmethod
    def _wait(row: Any, per_minute: int) -> float:
        tokens, granted = row
        return 0.0 if granted else (1.0 - float(tokens)) * 60.0 / per_minute

    def _row(self, engine: Engine, values: dict[str, Any]) -> Any:
        return run_statement(engine, lambda c: c.execute(self._take, values).one())

    def take_now(self, key: str, per_minute: int) -> float:
        """Blocking `take`."""
        return self._wait(self._row(self.engine, self._values(key, per_minute)), per_minute)

    async def take(self, key: str, per_minute: int) -> float:
        values = self._values(key, per_minute)
        if self.fast is not None:
            return self._wait(await self.fast.one(self._take_fast, values), per_minute)
        if self.nowait is not None:
            try:
                return self._wait(self._row(self.nowait, values), per_minute)
            except OperationalError as error:
                if "locked" not in str(error):
                    raise
        return self._wait(await run_in_threadpool(self._row, self.engine, values), per_minute)

    def purge(self) -> int:
        """Deletes the buckets that have been idle long enough to be full again; returns how many."""
        statement = text("DELETE FROM rate_bucket WHERE updated < :before")
        before = self.clock() - FULL_AFTER_SECONDS
        return int(run_statement(self.engine, lambda c: c.execute(statement, {"before": before}).rowcount))


class DatabaseFailures:
    """web.logins.FailureLog in the `login_failure` table (blocking work in the thread pool)."""

    def __init__(self, engine: Engine, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.time):
        self.engine = engine
        self.window = window
        self.clock = clock

    def wait_now(self, keys: Sequence[str], limit: int) -> float:
        now = self.clock()

        def limiting(connection: Connection) -> list[float]:
            found = []
            for key in keys:
                values = {"key": hashed(key), "since": now - self.window, "offset": limit - 1}
                at = connection.execute(LIMITING_FAILURE, values).scalar_one_or_none()
                if at is not None:
                    found.append(float(at))
            return found

        found: list[float] = run_statement(self.engine, limiting)
        return max([0.0, *(at + self.window - now for at in found)])

    def add_now(self, keys: Sequence[str]) -> None:
        statement = text("INSERT INTO login_failure (key, at) VALUES (:key, :at)")
        now = self.clock()
        rows = [{"key": hashed(key), "at": now} for key in keys]
        run_statement(self.engine, lambda c: c.execute(statement, rows))

    async def wait(self, keys: Sequence[str], limit: int) -> float:
        return float(await run_in_threadpool(self.wait_now, keys, limit))

    async def add(self, keys: Sequence[str]) -> None:
        await run_in_threadpool(self.add_now, keys)

    def purge(self) -> int:
        """Deletes the failures that no longer count; returns how many."""
        statement = text("DELETE FROM login_failure WHERE at <= :before")
        before = self.clock() - self.window
        return int(run_statement(self.engine, lambda c: c.execute(statement, {"before": before}).rowcount))
