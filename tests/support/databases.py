"""The app's database on a new SQLite file or in a new PostgreSQL schema, and a clock tests move by hand."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine

from web.db import make_engine

from ..postgres import database_url_or_skip, fresh_schema_url

# parametrize a fixture with these: PostgreSQL is skipped where no test server is configured
DATABASES = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@contextmanager
def app_database(kind: str, tmp_path: Path) -> Iterator[Engine]:
    """The app's engine with every table, on "sqlite" or "postgresql"; disposed at the end."""
    if kind == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'unerase.db'}")
        yield engine
        engine.dispose()
        return
    with fresh_schema_url(database_url_or_skip()) as schema:
        engine = make_engine(schema.url)
        yield engine
        engine.dispose()


@dataclass
class Clock:
    """Wall-clock seconds that pass only when a test says so."""

    now: float = 1_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
