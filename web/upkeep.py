"""Housekeeping of the tables that only grow otherwise: idle rate buckets, old failed logins, expired model
answers, read change-feed rows. One task per process runs each purge at its own interval, in the thread pool;
on several nodes each does it (the deletes are idempotent and cheap on their indexed columns), so no node has
to be the one that remembers.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from starlette.concurrency import run_in_threadpool

TICK_SECONDS = 60.0
OFTEN = 60.0  # tables read on every request (buckets): kept small
HOURLY = 3600.0  # the answers' cache: its SQLite file has no index on the expiry, a purge reads it whole

log = logging.getLogger(__name__)

Purge = Callable[[], int]


class Upkeep:
    """`purges`: (purge, seconds between two runs); each returns how many rows it removed."""

    def __init__(self, purges: Sequence[tuple[Purge, float]], clock: Callable[[], float] = time.monotonic) -> None:
        self.purges = tuple(purges)
        self.clock = clock
        self._last: dict[int, float] = {}

    def purge(self) -> int:
        """Runs the purges that are due (blocking); returns how many rows they removed. One that fails is logged
        and does not keep the others from running."""
        removed, now = 0, self.clock()
        for number, (purge, every) in enumerate(self.purges):
            if now - self._last.get(number, now - every) < every:
                continue
            self._last[number] = now
            try:
                removed += purge()
            except Exception:
                log.exception("housekeeping: %s failed; it runs again in %s s", purge, every)
        return removed

    async def run(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            await run_in_threadpool(self.purge)
