"""The database engine: SQLite in WAL mode by default, PostgreSQL (or any SQLAlchemy URL) if configured."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from sqlalchemy import event, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError, OperationalError, ProgrammingError
from sqlmodel import SQLModel, create_engine

from web import models  # noqa: F401  (registers the tables)
from web.precedents import ensure_index


def make_engine(url: str, **kwargs: Any) -> Engine:
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = sqlite_engine(url, **kwargs)
    else:
        engine = create_engine(url, pool_pre_ping=True, **kwargs)
    create_tables(engine)
    return engine


def sqlite_engine(url: str, timeout: float = 30, **kwargs: Any) -> Engine:
    """A SQLite engine whose connections use the app's settings (no tables created); `timeout`: how long a
    statement waits for a lock."""
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": timeout}, **kwargs)

    @event.listens_for(engine, "connect")
    def _pragmas(connection: Any, _record: Any) -> None:
        cursor = connection.cursor()
        # WAL lets readers (the progress stream, the report) run while a batch writes
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def create_tables(engine: Engine, attempts: int = 5) -> None:
    """Creates missing tables. Several workers starting on a new database race to create the same
    table; the loser's error only means another process got there first, so it looks again."""
    for attempt in range(attempts):
        try:
            SQLModel.metadata.create_all(engine)
            add_missing_columns(engine)
            ensure_index(engine)  # full-text search over moderators' precedents
            return
        except (OperationalError, ProgrammingError, IntegrityError) as exc:
            raced = "already exists" in str(exc) or "duplicate" in str(exc).lower()
            if not raced or attempt == attempts - 1:
                raise
            time.sleep(0.1 * (attempt + 1))


def add_missing_columns(engine: Engine) -> list[str]:
    """Adds columns and indexes a newer version of a table has and an existing database lacks (new columns
    always have defaults, so old rows read as before). Returns "table.column" for each column added."""
    added = []
    inspector = inspect(engine)
    for table in SQLModel.metadata.sorted_tables:
        if not inspector.has_table(table.name):
            continue
        present = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name in present:
                continue
            kind = column.type.compile(dialect=engine.dialect)
            default = getattr(column.default, "arg", None) if column.default is not None else None
            if callable(default):
                default = None  # a Python-side default (a timestamp): old rows keep NULL
            clause = "" if default is None else f" NOT NULL DEFAULT {_literal(default)}"
            with engine.begin() as connection:
                connection.execute(text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}{clause}'))
            added.append(f"{table.name}.{column.name}")
        for index in table.indexes:
            index.create(engine, checkfirst=True)
    return added


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"
