"""The change feed on a real SQLite file and a real PostgreSQL schema: every committed change is read once by
every process, also when ids commit out of order; rolled-back ones are never read; old rows are pruned and their
ids never come back."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import Engine
from sqlmodel import Session

from web import changes
from web.changes import GAP_SECONDS, KEEP_SECONDS, ChangeFeed

from .support.databases import DATABASES, Clock, app_database


@pytest.fixture(params=DATABASES)
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with app_database(request.param, tmp_path) as engine:
        yield engine


def commit(database: Engine, kind: str, key: str) -> None:
    with Session(database) as session:
        changes.record(session, kind, key)
        session.commit()


def feed_of(database: Engine, clock: Clock | None = None) -> tuple[ChangeFeed, list[tuple[str, str]]]:
    """A started feed whose handlers write down what they were told."""
    feed = ChangeFeed(database, clock=clock or Clock())
    told: list[tuple[str, str]] = []
    feed.on(changes.DECISION, lambda key: told.append((changes.DECISION, key)))
    feed.on(changes.SITE, lambda key: told.append((changes.SITE, key)))
    feed.start()
    return feed, told


def test_every_process_reads_each_change_once(database: Engine) -> None:
    commit(database, changes.SITE, "before-start")  # nothing of it can be in a process that starts later
    first, told_first = feed_of(database)
    second, told_second = feed_of(database)
    commit(database, changes.DECISION, "a1")
    commit(database, changes.SITE, "forum")
    for feed in (first, second):
        feed.dispatch(feed.read())
        feed.dispatch(feed.read())
    assert told_first == told_second == [(changes.DECISION, "a1"), (changes.SITE, "forum")]


def test_a_change_rolled_back_is_never_read_and_its_gap_is_given_up(database: Engine) -> None:
    clock = Clock()
    feed, told = feed_of(database, clock)
    with Session(database) as session:
        changes.record(session, changes.DECISION, "undone")
        session.flush()  # takes an id
        session.rollback()
    commit(database, changes.DECISION, "kept")
    feed.dispatch(feed.read())
    assert told == [(changes.DECISION, "kept")]
    if database.dialect.name == "postgresql":  # the sequence does not give the id back: a gap is watched
        assert len(feed.gaps) == 1
    clock.advance(GAP_SECONDS + 1)
    feed.read()
    assert feed.gaps == {}


@pytest.mark.postgres
def test_ids_committed_out_of_order_are_read_when_they_commit(tmp_path: Path) -> None:
    with app_database("postgresql", tmp_path) as database:
        feed, told = feed_of(database)
        slow = Session(database)
        changes.record(slow, changes.DECISION, "slow")
        slow.flush()  # id n, not committed yet
        commit(database, changes.DECISION, "fast")  # id n + 1, committed first
        feed.dispatch(feed.read())
        assert told == [(changes.DECISION, "fast")]
        slow.commit()
        slow.close()
        feed.dispatch(feed.read())
        feed.dispatch(feed.read())
        assert told == [(changes.DECISION, "fast"), (changes.DECISION, "slow")]
        assert feed.gaps == {}


def test_old_rows_are_pruned_and_their_ids_never_come_back(database: Engine) -> None:
    feed, told = feed_of(database)
    commit(database, changes.DECISION, "a1")
    feed.dispatch(feed.read())
    high = feed.high
    assert feed.prune(now=time.time() + KEEP_SECONDS + 1) == 1  # every row, the newest included
    commit(database, changes.DECISION, "a2")
    feed.dispatch(feed.read())
    assert told == [(changes.DECISION, "a1"), (changes.DECISION, "a2")] and feed.high > high


def test_recent_rows_are_kept(database: Engine) -> None:
    feed, _ = feed_of(database)
    commit(database, changes.SITE, "forum")
    assert feed.prune() == 0


def test_a_failing_handler_stops_neither_the_others_nor_the_feed(
    database: Engine, caplog: pytest.LogCaptureFixture
) -> None:
    feed, told = feed_of(database)

    def broken(key: str) -> None:
        raise RuntimeError(f"cannot forget {key}")

    feed.handlers[changes.DECISION].insert(0, broken)
    commit(database, changes.DECISION, "a1")
    commit(database, changes.DECISION, "a2")
    with caplog.at_level(logging.ERROR, logger="web.changes"):
        feed.dispatch(feed.read())
    assert told == [(changes.DECISION, "a1"), (changes.DECISION, "a2")] and "cannot forget a1" in caplog.text
