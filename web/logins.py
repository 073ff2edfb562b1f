"""Failed-login limits: per client IP (one client trying many names) and per user name (many clients trying one).

Only failures count, so a moderator who types correctly is never held up. The failures are kept by a
`FailureLog`: this process's memory (`MemoryFailures`) or the database every process shares
(web.shared.DatabaseFailures), so that a guesser spreading attempts over several nodes meets one limit.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

WINDOW_SECONDS = 15 * 60
MAX_TRACKED = 50_000


class FailureLog(Protocol):
    """Failures per key within a sliding window (the log's own `window`, in seconds)."""

    async def wait(self, keys: Sequence[str], limit: int) -> float:
        """0.0 when every key has fewer than `limit` failures in the window, otherwise the seconds until that is
        true again (when the failures that make one key reach the limit have aged out)."""
        ...

    async def add(self, keys: Sequence[str]) -> None:
        """Counts one failure for each key."""
        ...


class MemoryFailures:
    def __init__(self, window: float = WINDOW_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = window
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}

    def _recent(self, key: str, now: float) -> deque[float]:
        failures = self._failures.get(key, deque())
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        return failures

    async def wait(self, keys: Sequence[str], limit: int) -> float:
        now = self.clock()
        waits = [0.0]
        for key in keys:
            failures = self._recent(key, now)
            if len(failures) >= limit:
                # the limit-th newest failure: once it ages out, fewer than `limit` remain
                waits.append(failures[-limit] + self.window - now)
        return max(waits)

    async def add(self, keys: Sequence[str]) -> None:
        now = self.clock()
        if len(self._failures) >= MAX_TRACKED:
            # keys with no failure inside the window carry no information
            self._failures = {k: d for k, d in self._failures.items() if self._recent(k, now)}
        for key in keys:
            failures = self._recent(key, now)
            failures.append(now)
            self._failures[key] = failures


class LoginGuard:
    """`limit` failed logins per client and per user name within the log's window (0: no limit)."""

    def __init__(self, limit: int, log: FailureLog | None = None) -> None:
        self.limit = limit
        self.log = log if log is not None else MemoryFailures()

    @staticmethod
    def _keys(client: str, name: str) -> tuple[str, str]:
        return f"client\x00{client}", f"name\x00{name}"

    async def retry_after(self, client: str, name: str) -> int:
        """0 when the client may try this name now, otherwise whole seconds to wait."""
        if self.limit <= 0:
            return 0
        wait = await self.log.wait(self._keys(client, name), self.limit)
        return max(1, math.ceil(wait)) if wait > 0 else 0

    async def fail(self, client: str, name: str) -> None:
        if self.limit > 0:
            await self.log.add(self._keys(client, name))
