"""A persistent cache of LLM answers, keyed by what determines them.

Key: a hash of (stage, text, term, vocabulary version, prompt version, model id), so a second
analysis of the same text with the same configuration makes no LLM call, and any change to the
vocabulary, the prompts or the model misses. Entries expire after a TTL.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol


class ResultCache(Protocol):
    async def get(self, key: str) -> dict[str, Any] | None: ...

    async def set(self, key: str, value: dict[str, Any]) -> None: ...


def cache_key(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return digest.hexdigest()


class MemoryCache:
    """For tests and no-store deployments: lives as long as the process."""

    def __init__(self, ttl: float = 7 * 86400, clock: Callable[[], float] = time.time) -> None:
        self.ttl = ttl
        self.clock = clock
        self._data: dict[str, tuple[float, dict[str, Any]]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        item = self._data.get(key)
        if item is None or item[0] < self.clock():
            return None
        return item[1]

    async def set(self, key: str, value: dict[str, Any]) -> None:
        self._data[key] = (self.clock() + self.ttl, value)


class SQLiteCache:
    """One SQLite file (WAL); calls run in a worker thread, off the event loop."""

    def __init__(self, path: str | Path, ttl: float = 7 * 86400, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.ttl = ttl
        self.clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS llm_cache (key TEXT PRIMARY KEY, expires REAL NOT NULL, value TEXT NOT NULL)"
        )

    def _get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute("SELECT expires, value FROM llm_cache WHERE key = ?", (key,)).fetchone()
        if row is None or row[0] < self.clock():
            return None
        value: dict[str, Any] = json.loads(row[1])
        return value

    def _set(self, key: str, value: dict[str, Any]) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO llm_cache (key, expires, value) VALUES (?, ?, ?)",
                (key, self.clock() + self.ttl, json.dumps(value, ensure_ascii=False)),
            )

    def purge_expired(self) -> int:
        with self._lock:
            return self._db.execute("DELETE FROM llm_cache WHERE expires < ?", (self.clock(),)).rowcount

    async def get(self, key: str) -> dict[str, Any] | None:
        return await asyncio.to_thread(self._get, key)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        await asyncio.to_thread(self._set, key, value)

    def close(self) -> None:
        self._db.close()
