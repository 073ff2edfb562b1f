"""Single statements on the shared database, for the state several processes keep there (web/shared.py).

A rate-limit check or a cached answer is one statement that needs no transaction around it. On a server it runs
on a small autocommit pool of its own without pre-ping: one round trip, where the app's engine would add a ping
on checkout and a COMMIT after (0.6 ms against 0.3 ms per check on this machine's PostgreSQL,
benchmarks/bench_shared.py). A connection the server dropped is replaced and the statement tried once more.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.schema import CreateIndex, CreateTable

from web.db import sqlite_engine
from web.models import LoginFailure, RateBucket

if TYPE_CHECKING:  # psycopg is installed with the postgres extra only
    import psycopg


def sqlite_limits(path: Path, wait: bool = True) -> Engine:
    """An autocommit engine on the SQLite file where the workers sharing a data directory keep their limits: a file
    of its own, so that a check never queues for the write lock behind the app's own writes (a batch's commits).
    `wait=False`: a statement that finds the file locked fails at once (web.shared_limits then waits in a
    thread); the waiting engine, made first, creates the tables if missing (IF NOT EXISTS: workers starting
    together do it at the same time)."""
    engine = sqlite_engine(f"sqlite:///{path}", timeout=30 if wait else 0, isolation_level="AUTOCOMMIT")
    if not wait:
        return engine
    with engine.connect() as connection:
        for table in (RateBucket.__table__, LoginFailure.__table__):  # type: ignore[attr-defined]
            connection.execute(CreateTable(table, if_not_exists=True))
            for index in table.indexes:
                connection.execute(CreateIndex(index, if_not_exists=True))
    return engine


def statement_engine(database: Engine) -> Engine:
    """An autocommit engine with a small pool of its own beside `database` (on SQLite too: switching the app's
    connections to autocommit and back on every checkout costs more than the statement)."""
    if database.dialect.name == "sqlite":
        return sqlite_engine(database.url.render_as_string(hide_password=False), isolation_level="AUTOCOMMIT")
    return create_engine(database.url, isolation_level="AUTOCOMMIT", pool_size=4, max_overflow=8)


def run_statement(engine: Engine, work: Callable[[Connection], Any]) -> Any:
    """`work` on a connection of `engine`; once more on a fresh connection if the server had dropped this one."""
    try:
        with engine.connect() as connection:
            return work(connection)
    except DBAPIError as error:
        if not error.connection_invalidated:
            raise
    with engine.connect() as connection:
        return work(connection)


class AsyncConnections:
    """PostgreSQL only: a few of psycopg's asyncio connections (autocommit) for the statement every public request
    makes, the rate limit's. Through SQLAlchemy in the thread pool that statement cost a request 2 ms of CPU on a
    loaded two-core machine (the hop to a thread and back, fought over with the event loop for the GIL); on the
    event loop with psycopg it costs about 0.15 ms of CPU (benchmarks/README.md, "Shared state").

    Connections are opened when first needed, on the loop that uses them, at most `size` at once; one that fails
    is closed (not reused) and the statement is tried once more on a new one."""

    def __init__(self, url: URL, size: int = 4) -> None:
        self.conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.size = size
        self._slots: asyncio.Semaphore | None = None
        self._idle: list[psycopg.AsyncConnection[tuple[Any, ...]]] = []
        self._closed = False

    async def one(self, query: str, values: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row `query` (psycopg's %(name)s parameters) returns."""
        import psycopg

        if self._slots is None:
            self._slots = asyncio.Semaphore(self.size)
        async with self._slots:
            try:
                return await self._once(query, values)
            except psycopg.OperationalError:
                return await self._once(query, values)

    async def _once(self, query: str, values: dict[str, Any]) -> tuple[Any, ...] | None:
        import psycopg

        connection = (
            self._idle.pop() if self._idle else await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
        )
        try:
            cursor = await connection.execute(query, values)
            row = await cursor.fetchone()
        except BaseException:
            await connection.close()
            raise
        if self._closed:
            await connection.close()
        else:
            self._idle.append(connection)
        return row

    async def aclose(self) -> None:
        """Closes the idle connections (a statement still running closes its own when it ends)."""
        self._closed = True
        while self._idle:
            await self._idle.pop().close()


def psycopg_style(query: str) -> str:
    """`:name` parameters (SQLAlchemy's text()) as psycopg's `%(name)s`."""
    return re.sub(r"(?<!:):(\w+)", r"%(\1)s", query)
