"""Per-client rate limits on the public POST endpoints: a token bucket per IP address.

A client may send `limit` requests at once and then one more every 60/limit seconds; beyond that
it gets 429 with Retry-After. Buckets live in memory (per process), which is what a single
self-hosted instance needs; idle buckets are dropped so the table cannot grow without bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from fastapi import Request

from web.errors import RateLimited

MAX_CLIENTS = 50_000


class RateLimiter:
    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, last refill time)

    def check(self, client: str) -> None:
        if self.capacity <= 0:
            return
        now = self.clock()
        tokens, last = self._buckets.get(client, (self.capacity, now))
        tokens = min(self.capacity, tokens + (now - last) * self.rate)
        if tokens < 1.0:
            retry = max(1, math.ceil((1.0 - tokens) / self.rate))
            self._buckets[client] = (tokens, now)
            raise RateLimited(
                f"too many requests from {client}: at most {int(self.capacity)} per minute are accepted; "
                f"try again in {retry} s",
                retry,
            )
        if len(self._buckets) >= MAX_CLIENTS:
            self._forget_full(now)
        self._buckets[client] = (tokens - 1.0, now)

    def _forget_full(self, now: float) -> None:
        # a bucket that has refilled completely carries no information
        full_after = self.capacity / self.rate
        self._buckets = {c: (t, last) for c, (t, last) in self._buckets.items() if now - last < full_after}


def client_address(request: Request, trust_forwarded_for: bool) -> str:
    if trust_forwarded_for:
        forwarded = request.headers.get("x-forwarded-for", "")
        if forwarded:
            return forwarded.split(",")[0].strip()
    return request.client.host if request.client else "unknown"
