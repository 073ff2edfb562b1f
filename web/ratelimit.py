"""Per-client rate limits: the public POST endpoints' limit per IP, and each site's limit per client.

A limit of N per minute is a token bucket per client: N requests at once, then one more every 60/N seconds;
beyond that 429 with Retry-After. Where the buckets live is the `TokenBuckets` protocol's business: in this
process's memory (`MemoryBuckets`: one process, nothing to share, no cost) or in the database every process
shares (web.shared.DatabaseBuckets), so that two nodes behind a load balancer do not double what a client may do.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Protocol

from fastapi import Request

from web.errors import RateLimited

MAX_CLIENTS = 50_000


class TokenBuckets(Protocol):
    async def take(self, key: str, per_minute: int) -> float:
        """Takes a token from `key`'s bucket (capacity `per_minute`, refilled at that rate): 0.0 when it got one,
        otherwise the seconds until one will be there (nothing is taken then)."""
        ...


class MemoryBuckets:
    """Buckets of one process. Idle ones are dropped once MAX_CLIENTS are held, so the table cannot grow without
    bound."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # key -> (tokens, last refill time)

    async def take(self, key: str, per_minute: int) -> float:
        capacity, rate = float(per_minute), per_minute / 60.0
        now = self.clock()
        tokens, last = self._buckets.get(key, (capacity, now))
        tokens = min(capacity, tokens + (now - last) * rate)
        if tokens < 1.0:
            self._buckets[key] = (tokens, now)
            return (1.0 - tokens) / rate
        if len(self._buckets) >= MAX_CLIENTS:
            # a bucket that has refilled completely (60 s whatever the limit) carries no information
            self._buckets = {k: (t, at) for k, (t, at) in self._buckets.items() if now - at < 60.0}
        self._buckets[key] = (tokens - 1.0, now)
        return 0.0


class RateLimiter:
    """One limit: `per_minute` requests per client (0: none), counted in `buckets` under `scope`."""

    def __init__(self, per_minute: int, buckets: TokenBuckets | None = None, scope: str = "api") -> None:
        self.per_minute = per_minute
        self.buckets = buckets if buckets is not None else MemoryBuckets()
        self.scope = scope

    async def check(self, client: str) -> None:
        if self.per_minute <= 0:
            return
        wait = await self.buckets.take(f"{self.scope}\x00{client}", self.per_minute)
        if wait > 0:
            retry = max(1, math.ceil(wait))
            raise RateLimited(
                f"too many requests from {client}: at most {self.per_minute} per minute are accepted; "
                f"try again in {retry} s",
                retry,
            )


def client_address(request: Request, trust_forwarded_for: bool) -> str:
    if trust_forwarded_for:
        forwarded = request.headers.get("x-forwarded-for", "")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.client.host if request.client else "unknown"
