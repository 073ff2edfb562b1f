"""Housekeeping of the tables that only grow otherwise: idle rate buckets, old failed logins, expired model
answers, read change-feed rows. One task per process runs the purges every PURGE_SECONDS, in the thread pool;
on several nodes each does it (the deletes are idempotent and cheap on their indexed columns), so no node has
to be the one that remembers.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence

from starlette.concurrency import run_in_threadpool

PURGE_SECONDS = 60.0

log = logging.getLogger(__name__)


class Upkeep:
    def __init__(self, purges: Sequence[Callable[[], int]], every: float = PURGE_SECONDS) -> None:
        self.purges = tuple(purges)
        self.every = every

    def purge(self) -> int:
        """Runs every purge once (blocking); returns how many rows they removed. One that fails is logged and
        does not keep the others from running."""
        removed = 0
        for purge in self.purges:
            try:
                removed += purge()
            except Exception:
                log.exception("housekeeping: %s failed; it runs again in %s s", purge, self.every)
        return removed

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            await run_in_threadpool(self.purge)
