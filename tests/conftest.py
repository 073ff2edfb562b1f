from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.detector import Detector
from engine.vocabulary.loader import load_vocabulary
from engine.vocabulary.model import Vocabulary
from web.db import make_engine
from web.store import Store

from .postgres import database_url_or_skip, fresh_schema_url
from .support.paths import FIXTURES


@pytest.fixture(scope="session")
def fixture_vocabulary() -> Vocabulary:
    return load_vocabulary(FIXTURES / "vocab")


@pytest.fixture(scope="session")
def detector(fixture_vocabulary: Vocabulary, tmp_path_factory: pytest.TempPathFactory) -> Detector:
    return Detector(fixture_vocabulary, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A Store on a new SQLite file, and again in a new PostgreSQL schema (skipped where no server is configured)."""
    if request.param == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'unerase.db'}")
        yield Store(engine)
        engine.dispose()
        return
    with fresh_schema_url(database_url_or_skip()) as schema:
        engine = make_engine(schema.url)
        yield Store(engine)
        engine.dispose()
