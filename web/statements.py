"""Single statements on the shared database, for the state several processes keep there (web/shared.py).

A rate-limit check or a cached answer is one statement that needs no transaction around it. On a server it runs
on a small autocommit pool of its own without pre-ping: one round trip, where the app's engine would add a ping
on checkout and a COMMIT after (0.6 ms against 0.3 ms per check on this machine's PostgreSQL,
benchmarks/bench_shared.py). A connection the server dropped is replaced and the statement tried once more.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from web.db import sqlite_engine


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
