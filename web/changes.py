"""A feed of changes that other processes must hear of at once: moderators' decisions and sites' settings.

Each process keeps things ready in memory that such a change makes stale: the widget's finished documents
(web.widget), the sites and their term rules (web.sites). A writer appends a row to `change_feed` in the same
transaction as the change (`record`), so the row exists exactly when the change does; every process reads the
rows it has not seen every POLL_SECONDS (`ChangeFeed.run`, started with the app) and calls the handlers of
their kind, which drop what is stale. The rows are read by their id, an indexed primary key: the query is
cheap enough to run twice a second on every node.

Deliberate choices (do not "fix"):
- Ids that commit out of order. A PostgreSQL sequence hands out ids when rows are inserted, not when they
  commit: id 7 may become visible after id 8 was read. An id skipped below the highest one read is a *gap*,
  asked for again with every read for GAP_SECONDS (a gap that never fills was a transaction rolled back).
  Handlers only drop what is stale, so a row read twice would do no harm; the gaps keep it from happening.
- Polling, not PostgreSQL's LISTEN/NOTIFY: half a second is well inside what a moderator's decision needs,
  the same code serves SQLite with several workers, and NOTIFY needs a connection per process held outside
  the pool (which a transaction-mode connection pooler in front of PostgreSQL does not allow).
- The caches keep their own expiry (web.widget.DOCUMENT_SECONDS, web.sites.CACHE_SECONDS) as a fallback for a
  process that could not read the feed for a while.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import func
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, or_, select
from starlette.concurrency import run_in_threadpool

from web.models import Change

POLL_SECONDS = 0.5
GAP_SECONDS = 30.0
KEEP_SECONDS = 3600.0  # rows older than this are pruned: every process has long read them
READ_LIMIT = 1000
MAX_GAPS = 10_000

DECISION = "decision"  # key: the analysis a moderator decided, or whose decision was undone
SITE = "site"  # key: the site whose settings or term rules changed

log = logging.getLogger(__name__)


def record(session: Session, kind: str, key: str) -> None:
    """Appends a change to the caller's transaction: other processes hear of it once it commits."""
    session.add(Change(kind=kind, key=key, at=time.time()))


@dataclass(frozen=True)
class Seen:
    id: int
    kind: str
    key: str


class ChangeFeed:
    """Reads the feed for one process and calls its handlers. `start` (blocking) before `run`."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.monotonic) -> None:
        self.engine = engine
        self.clock = clock
        self.handlers: dict[str, list[Callable[[str], None]]] = {}
        self.high = 0  # the highest id read
        self.gaps: dict[int, float] = {}  # ids below `high` not read yet -> when they were noticed

    def on(self, kind: str, handler: Callable[[str], None]) -> None:
        self.handlers.setdefault(kind, []).append(handler)

    def start(self) -> None:
        """From now on: what was changed before this process started cannot be in its memory. (A change whose
        transaction takes an id before this and commits after it is not read: the caches' own expiry covers
        that window of a few milliseconds at startup.)"""
        with Session(self.engine) as session:
            self.high = session.exec(select(func.max(Change.id))).one() or 0

    def read(self) -> list[Seen]:
        """The rows not read before, oldest first (blocking)."""
        wanted = col(Change.id) > self.high
        if self.gaps:
            wanted = or_(wanted, col(Change.id).in_(list(self.gaps)))
        query = select(Change.id, Change.kind, Change.key).where(wanted).order_by(col(Change.id)).limit(READ_LIMIT)
        with Session(self.engine) as session:
            rows = [Seen(int(id_ or 0), kind, key) for id_, kind, key in session.exec(query)]
        now = self.clock()
        for row in rows:
            if row.id in self.gaps:
                del self.gaps[row.id]
            elif row.id > self.high:
                for missing in range(max(self.high + 1, row.id - MAX_GAPS), row.id):
                    self.gaps[missing] = now
                self.high = row.id
        for gap in [gap for gap, noticed in self.gaps.items() if now - noticed > GAP_SECONDS]:
            del self.gaps[gap]
        while len(self.gaps) > MAX_GAPS:
            del self.gaps[min(self.gaps)]
        return rows

    def dispatch(self, rows: list[Seen]) -> None:
        for row in rows:
            for handler in self.handlers.get(row.kind, ()):
                try:
                    handler(row.key)
                except Exception:  # one handler's failure must not stop the feed, nor the other handlers
                    log.exception("the change feed's handler %s failed on %s", handler, row)

    async def run(self) -> None:
        """Reads and dispatches every POLL_SECONDS until cancelled; a failed read is logged and tried again."""
        while True:
            await asyncio.sleep(POLL_SECONDS)
            try:
                rows = await run_in_threadpool(self.read)
            except Exception:
                log.exception("could not read the change feed; trying again in %s s", POLL_SECONDS)
                continue
            self.dispatch(rows)

    def prune(self, now: float | None = None) -> int:
        """Deletes the rows every process has long read (older than KEEP_SECONDS); returns how many."""
        table = Change.__table__  # type: ignore[attr-defined]
        before = (time.time() if now is None else now) - KEEP_SECONDS
        with Session(self.engine) as session:
            removed = session.execute(table.delete().where(table.c.at < before)).rowcount  # type: ignore[attr-defined]
            session.commit()
        return int(removed)
