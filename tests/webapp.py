"""Building the web app for tests: real settings in tmp_path, a real SQLite file, the fixture vocabulary."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from engine.analysis import BackendRouter
from web.app import create_app
from web.settings import Settings

from .postgres import database_url_or_skip, fresh_schema_url
from .support.paths import FIXTURES

# compiled lemma keys are shared by every app the tests build (they depend only on the vocabulary)
LEMMA_CACHE = Path(tempfile.mkdtemp(prefix="unerase-test-lemmas-"))


def settings(tmp: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "vocabularies": [FIXTURES / "vocab"],
        "data_dir": tmp / "data",
        "cache_dir": LEMMA_CACHE,
        "rate_limit_per_minute": 0,
        "max_text_chars": 2_000,
        "spot_check_percent": 0.0,  # a random draw would make queue contents vary; tests that want it set 100
        # a widget check answers as soon as its analyses finish; a long wait only keeps a loaded machine from
        # turning a finished-in-4-seconds analysis into "running" (the test of that state sets its own)
        "widget_wait_seconds": 30.0,
        # the embedding example source decides many ambiguous hits; the tests that exercise it (test_sense_examples,
        # test_precedents_import) turn it on, the others keep the verdicts they were written for
        "examples_enabled": False,
        # the learned use source reads hits the rules leave uncued (engine.use_model): tests/test_use_model.py turns
        # it on, the others keep the uses the rules give
        "learned_uses_enabled": False,
    }
    values.update(overrides)
    return Settings(**values)


@contextmanager
def client(tmp: Path, backends: BackendRouter | None = None, **overrides: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings(tmp, **overrides), backends=backends)) as test_client:
        yield test_client


@contextmanager
def client_on(database: str, tmp: Path, **overrides: Any) -> Iterator[TestClient]:
    """The app on a SQLite file ("sqlite") or in a fresh schema of the test PostgreSQL server ("postgresql";
    the test is skipped where none is configured)."""
    if database == "sqlite":
        with client(tmp, **overrides) as test_client:
            yield test_client
        return
    # the app closes its connections when it stops (Services.aclose), before the schema is dropped
    with fresh_schema_url(database_url_or_skip()) as schema, client(tmp, database_url=schema.url, **overrides) as api:
        yield api


def sse_events(body: str) -> list[tuple[str, str]]:
    """(event name, data) for each message of an SSE body; comments (pings) are skipped."""
    events = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
        if data:
            events.append((name, "\n".join(data)))
    return events
