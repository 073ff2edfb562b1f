"""The PostgreSQL test helper against a real server: a schema per session, a round trip, the drop at the end."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, insert, select, text

from tests.postgres import SKIP_MESSAGE, SessionSchema, database_url_or_skip, fresh_schema_url


@pytest.fixture(scope="module")
def schema() -> Iterator[SessionSchema]:
    with fresh_schema_url(database_url_or_skip()) as schema:
        yield schema


def _schema_exists(url: str, name: str) -> bool:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            query = text("SELECT count(*) FROM information_schema.schemata WHERE schema_name = :name")
            return bool(connection.execute(query, {"name": name}).scalar_one())
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_round_trip_lands_in_the_session_schema(schema: SessionSchema) -> None:
    metadata = MetaData()
    notes = Table(
        "notes",
        metadata,
        Column("id", Integer, primary_key=True),
        Column("body", String(200), nullable=False),
    )
    engine = schema.create_engine()
    try:
        metadata.create_all(engine)
        with engine.begin() as connection:
            connection.execute(insert(notes), [{"body": "first"}, {"body": "zweite Notiz — ünïcode"}])
        with engine.connect() as connection:
            rows = connection.execute(select(notes.c.id, notes.c.body).order_by(notes.c.id)).all()
            where = (
                connection.execute(
                    text("SELECT table_schema FROM information_schema.tables WHERE table_name = 'notes'")
                )
                .scalars()
                .all()
            )
            current = connection.execute(text("SELECT current_schema()")).scalar_one()
    finally:
        engine.dispose()
    assert [tuple(row) for row in rows] == [(1, "first"), (2, "zweite Notiz — ünïcode")]
    assert where == [schema.name]
    assert current == schema.name


@pytest.mark.postgres
def test_each_schema_is_new_and_dropped_with_its_tables() -> None:
    url = database_url_or_skip()
    with fresh_schema_url(url) as first, fresh_schema_url(url) as second:
        assert first.name != second.name
        engine = first.create_engine()
        try:
            with engine.begin() as connection:
                connection.execute(text("CREATE TABLE leftovers (id integer)"))
        finally:
            engine.dispose()
        assert _schema_exists(url, first.name)
    assert not _schema_exists(url, first.name)
    assert not _schema_exists(url, second.name)


def test_without_a_configured_server_the_test_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UNERASE_TEST_DATABASE_URL", raising=False)
    with pytest.raises(pytest.skip.Exception) as skipped:
        database_url_or_skip()
    assert str(skipped.value) == SKIP_MESSAGE


def test_a_url_for_another_database_is_refused() -> None:
    with (
        pytest.raises(ValueError, match=r"^sqlite:// is a 'sqlite' URL; only postgresql URLs are accepted$"),
        fresh_schema_url("sqlite://"),
    ):
        pass
