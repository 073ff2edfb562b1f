"""The database side of running analyses: who runs each one, and its events while it runs (docs/deploy.md).

Every process that shares the database follows the same rules, so none needs to know the others:

- **Claim.** A process runs an analysis only after a conditional UPDATE made it the owner: the analysis was pending
  (or failed), or its owner's lease has run out. The database lets exactly one of several claimants win.
- **Lease.** The owner renews `lease_until` for all its analyses at once, every third of `lease_seconds`; a
  process that dies stops renewing, and once the lease has run out any other process may claim the analysis and
  finish it.
- **Events.** An event is stored (`analysis_event`, numbered by `seq`) before anyone is shown it, so every node
  replays the same stream with the same numbers, and `Last-Event-ID` resumes exactly wherever the client
  reconnects. The primary key (analysis, seq) accepts a position once: an owner that lost its claim without
  knowing (it stalled past its lease) fails on its next write instead of forking the stream.
- **Takeover.** A new owner reads the stored events first and continues the stream after them, adding only what is
  not there yet (`event_key`).
- **Finish.** The whole stream goes into the analysis row with status complete, the event rows are deleted and the
  claim cleared, in one transaction (web.store.Store.save_many).

Times are wall-clock epoch seconds from each process: nodes are assumed to keep their clocks in sync (NTP); a skew
well below `lease_seconds` only moves a takeover earlier or later by that much.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from engine.errors import UneraseError
from engine.result import StoredEvent
from web.models import AnalysisEvent, AnalysisRecord
from web.signals import WORK_SIGNAL, analysis_signal, send

ANALYSES = AnalysisRecord.__table__  # type: ignore[attr-defined]
EVENTS = AnalysisEvent.__table__  # type: ignore[attr-defined]
CLAIMABLE = ("pending", "failed")


class LostClaim(UneraseError):
    """Another process took the analysis over: this one must stop producing it."""

    code = "lost-claim"


def new_node_id() -> str:
    """This process among the nodes sharing one database: host, process id and a random part (a restarted process
    may get the same id from the system; it must not inherit what its predecessor had claimed)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


def event_key(event: StoredEvent) -> str:
    """What an event says, as far as a stream can say it once: a takeover skips events whose key is stored."""
    kind, data = event["type"], event["data"]
    if kind == "hit":
        return f"hit:{data.get('id')}"
    if kind == "verdict":
        return f"verdict:{data.get('hit_id')}"
    if kind == "error":
        return f"error:{data.get('stage')}:{data.get('code')}:{data.get('message')}"
    return str(kind)  # analysis, targeting, explanation, decision, done: one each


@dataclass(frozen=True)
class Snapshot:
    """An analysis as the database has it now: its row (without the stored stream) and its events after a
    position, from the event rows while it runs, from the stored stream once it is complete."""

    record: AnalysisRecord
    events: list[tuple[int, StoredEvent]]

    def claimable(self, now: float) -> bool:
        record = self.record
        if record.status in CLAIMABLE:
            return True
        return record.status == "running" and (record.lease_until is None or record.lease_until < now)


class AnalysisLog:
    """Blocking (SQLAlchemy): call it in a thread."""

    def __init__(self, engine: Engine, node: str, lease_seconds: float) -> None:
        self.engine = engine
        self.node = node
        self.lease_seconds = lease_seconds

    def claim(self, analysis_id: str, detached: bool = False, now: float | None = None) -> bool:
        """Makes this process the owner if nobody holds the analysis (pending, failed or an expired lease)."""
        now = time.time() if now is None else now
        values: dict[str, Any] = {"status": "running", "owner": self.node, "lease_until": now + self.lease_seconds}
        if detached:
            values["detached"] = True
        query = (
            update(ANALYSES)
            .where(
                ANALYSES.c.id == analysis_id,
                or_(
                    ANALYSES.c.status.in_(CLAIMABLE),
                    and_(
                        ANALYSES.c.status == "running",
                        or_(ANALYSES.c.lease_until.is_(None), ANALYSES.c.lease_until < now),
                    ),
                ),
            )
            .values(values)
        )
        with self.engine.begin() as connection:
            return bool(connection.execute(query).rowcount)

    def renew(self, now: float | None = None) -> int:
        """Extends the lease of every analysis this process runs; returns how many it still holds."""
        now = time.time() if now is None else now
        query = (
            update(ANALYSES)
            .where(ANALYSES.c.owner == self.node, ANALYSES.c.status == "running")
            .values(lease_until=now + self.lease_seconds)
        )
        with self.engine.begin() as connection:
            return int(connection.execute(query).rowcount or 0)

    def release(self, analysis_id: str, detached: bool) -> None:
        """Gives the analysis up (its run was cancelled here): a detached one stays running with an expired lease,
        for another process to take over at once; one that only a listener wanted goes back to pending, and the
        next listener starts it again, after the events already stored."""
        values: dict[str, Any] = (
            {"lease_until": 0.0} if detached else {"status": "pending", "owner": None, "lease_until": None}
        )
        query = update(ANALYSES).where(ANALYSES.c.id == analysis_id, ANALYSES.c.owner == self.node).values(values)
        with self.engine.begin() as connection:
            connection.execute(query)
            send(connection, analysis_signal(analysis_id), *([WORK_SIGNAL] if detached else []))

    def fail(self, analysis_id: str) -> None:
        """The run here failed: the analysis may be tried again by whoever asks for it next."""
        query = (
            update(ANALYSES)
            .where(ANALYSES.c.id == analysis_id, ANALYSES.c.owner == self.node)
            .values(status="failed", owner=None, lease_until=None)
        )
        with self.engine.begin() as connection:
            connection.execute(query)
            send(connection, analysis_signal(analysis_id))

    def call_workers(self) -> None:
        """Tells the processes that run jobs that a detached analysis waits for one of them."""
        with self.engine.begin() as connection:
            send(connection, WORK_SIGNAL)

    def status(self, analysis_id: str) -> str | None:
        with self.engine.connect() as connection:
            found = connection.execute(select(ANALYSES.c.status).where(ANALYSES.c.id == analysis_id)).scalar()
        return None if found is None else str(found)

    def append(self, analysis_id: str, first_seq: int, events: Sequence[StoredEvent]) -> None:
        """Stores events at positions first_seq, first_seq+1, ...; LostClaim if any position is taken."""
        rows = [
            {"analysis_id": analysis_id, "seq": first_seq + i, "type": e["type"], "data": json.dumps(e["data"])}
            for i, e in enumerate(events)
        ]
        if not rows:
            return
        try:
            with self.engine.begin() as connection:
                connection.execute(insert(EVENTS), rows)
                send(connection, analysis_signal(analysis_id))
        except IntegrityError as exc:
            raise LostClaim(f"analysis {analysis_id}: event {first_seq} was stored by another process") from exc

    def snapshot(self, analysis_id: str, after: int = -1) -> Snapshot | None:
        """The analysis and its events numbered after `after`; None if it does not exist."""
        with self.engine.connect() as connection:
            row = connection.execute(select(ANALYSES).where(ANALYSES.c.id == analysis_id)).mappings().first()
            if row is None:
                return None
            record = AnalysisRecord.model_validate(dict(row))
            if record.status == "complete":
                stream = json.loads(record.events)
                return Snapshot(record, [(seq, e) for seq, e in enumerate(stream) if seq > after])
            rows = connection.execute(
                select(EVENTS.c.seq, EVENTS.c.type, EVENTS.c.data)
                .where(EVENTS.c.analysis_id == analysis_id, EVENTS.c.seq > after)
                .order_by(EVENTS.c.seq)
            ).all()
        events: list[tuple[int, StoredEvent]] = []
        for seq, kind, data in rows:
            if seq != after + 1 + len(events):
                break  # never skip a position: a gap is a row still being written; it is read next time
            events.append((seq, {"type": kind, "data": json.loads(data)}))
        return Snapshot(record, events)

    def claimable(self, limit: int, now: float | None = None) -> list[str]:
        """Analyses a process that runs jobs should take: detached ones nobody runs, and any whose lease ran out."""
        now = time.time() if now is None else now
        query = (
            select(ANALYSES.c.id)
            .where(
                or_(
                    and_(ANALYSES.c.status == "pending", ANALYSES.c.detached.is_(True)),
                    and_(
                        ANALYSES.c.status == "running",
                        or_(ANALYSES.c.lease_until.is_(None), ANALYSES.c.lease_until < now),
                    ),
                )
            )
            .order_by(ANALYSES.c.created_at)
            .limit(limit)
        )
        with self.engine.connect() as connection:
            return list(connection.execute(query).scalars())
