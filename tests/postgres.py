"""Helpers for tests that need a real PostgreSQL server.

The server is named by UNERASE_TEST_DATABASE_URL (`.ci/run` starts one and sets it). Each test session works in
a schema of its own that is dropped afterwards, so runs can share one database and leave nothing behind.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, make_url, text

DATABASE_URL_VARIABLE = "UNERASE_TEST_DATABASE_URL"
SKIP_MESSAGE = (
    "PostgreSQL tests need UNERASE_TEST_DATABASE_URL (e.g. postgresql+psycopg://user:pw@127.0.0.1:5432/db); "
    ".ci/run starts a server and sets it"
)


def database_url_or_skip() -> str:
    """The test server's URL, or skip the calling test when none is configured."""
    url = os.environ.get(DATABASE_URL_VARIABLE, "").strip()
    if not url:
        pytest.skip(SKIP_MESSAGE)
    return url


@dataclass(frozen=True)
class SessionSchema:
    """A schema created for one test session.

    `url` carries `options=-csearch_path=<name>`, so anything that only accepts a database URL (the app's
    settings, `create_engine`) creates and finds its tables in this schema without further arguments.
    """

    name: str
    url: str

    def create_engine(self, **kwargs: Any) -> Engine:
        return create_engine(self.url, **kwargs)


@contextmanager
def fresh_schema_url(url: str) -> Iterator[SessionSchema]:
    """Create a uniquely named schema on the server at `url`, yield it, and drop it with its contents.

    Engines made from the schema's URL must be disposed of before the block ends: an open transaction on one
    of its tables would make the drop wait, which `lock_timeout` turns into an error instead of a hung run.
    """
    server = make_url(url)
    backend = server.get_backend_name()
    if backend != "postgresql":
        raise ValueError(f"{server.render_as_string()} is a {backend!r} URL; only postgresql URLs are accepted")
    # Only lowercase letters, digits and underscores, so the name never needs quoting.
    name = f"unerase_test_{secrets.token_hex(6)}"
    given = server.query.get("options", ())
    options = " ".join([given] if isinstance(given, str) else [*given]) + f" -csearch_path={name}"
    scoped = server.update_query_dict({"options": options.strip()})
    admin = create_engine(server)
    try:
        with admin.begin() as connection:
            connection.execute(text(f"CREATE SCHEMA {name}"))
        try:
            yield SessionSchema(name=name, url=scoped.render_as_string(hide_password=False))
        finally:
            with admin.begin() as connection:
                connection.execute(text("SET LOCAL lock_timeout = '10s'"))
                connection.execute(text(f"DROP SCHEMA IF EXISTS {name} CASCADE"))
    finally:
        admin.dispose()
