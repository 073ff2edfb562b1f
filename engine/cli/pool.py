"""`--jobs N` of `unerase detect --input` and `unerase analyze --input`: N worker processes share one JSONL
input, and the results are written in input order, the same bytes as one process writes.

Deliberate choices (do not "fix"):
- Work crosses to a worker in *chunks* of lines, not record by record. A vocabulary-only record takes well
  under a millisecond; handing each one to another process would cost more than its analysis. A chunk is
  raw lines (parsed in the worker, so parsing is shared out too) and comes back as the output text of its
  records, in order, with its counts. Inside a worker, `analyze` runs its chunk through the ordered runner
  (`engine.cli.runner.run_in_order`) with `--concurrency`, as one process runs the whole input.
- Memory stays flat for any input length: the input is read only as chunks are handed out, and at most
  `jobs * AHEAD` chunks are in flight or waiting to be written (one slow chunk holds back the ordered output,
  so the chunks after it wait finished behind it, as in the runner).
- Workers are *spawned* (a fresh interpreter), never forked: a fork copies a parent that may hold a loaded
  model, the threads of llama.cpp or ONNX Runtime and open database connections, which fork does not copy
  safely. Each worker builds its detector or analyzer once, in the pool's initializer.
- What a worker builds from is sent to it (the loaded vocabulary, the options), not read again, so every
  worker analyses with the vocabulary the parent checked and whose version the lines carry.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from engine.errors import UneraseError

# Lines per chunk: big enough that handing it over is cheap beside its analysis (about 0.15 MB of ~300-character
# records), small enough that `jobs * AHEAD` of them are little memory.
CHUNK = 500
# How many chunks per worker may be handed out or wait to be written: one being analysed, one queued.
AHEAD = 2

Chunk = tuple[int, list[str]]  # the number of its first line, its lines
Done = tuple[str, int, int]  # the output text of a chunk's records, how many were analysed, how many failed


def parse_jobs(value: str | None) -> int:
    """The number of worker processes `--jobs` asks for: a whole number from 1, or `auto` (one per CPU)."""
    if value is None:
        return 1
    if value.strip().lower() == "auto":
        return os.cpu_count() or 1
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise UneraseError(
            f"--jobs {value} is not accepted; give the number of worker processes (1 or more) or auto (one per CPU)"
        )
    return jobs


def chunks(lines: Iterable[str], size: int | None = None) -> Iterator[Chunk]:
    """The lines in chunks of `size` (default CHUNK), each with the number of its first line; read only as far
    as asked."""
    size = size or CHUNK
    batch: list[str] = []
    first = 1
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield first, batch
            first += size
            batch = []
    if batch:
        yield first, batch


def run_in_pool(
    work: Iterable[Chunk],
    analyse: Callable[[Chunk], Done],
    write: Callable[[str], object],
    *,
    jobs: int,
    initializer: Callable[..., None],
    initargs: tuple[Any, ...],
) -> tuple[int, int]:
    """Every chunk analysed by one of `jobs` spawned workers (each set up by `initializer(*initargs)`) and its
    output written in input order. Returns how many records were analysed and how many failed."""
    done = failed = 0
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=context, initializer=initializer, initargs=initargs)
    window: deque[Future[Done]] = deque()

    def write_oldest() -> None:
        nonlocal done, failed
        text, analysed, errors = window.popleft().result()
        write(text)
        done, failed = done + analysed, failed + errors

    try:
        for chunk in work:
            window.append(pool.submit(analyse, chunk))
            if len(window) >= jobs * AHEAD:
                write_oldest()
        while window:
            write_oldest()
    except BrokenProcessPool as exc:
        # a worker was killed (out of memory, a signal) or crashed in native code: what is written is complete
        # up to the last chunk written, and nothing after it
        raise UneraseError(
            f"a worker process ended unexpectedly ({exc}); the output stops at the last whole chunk. "
            "Run again, with fewer --jobs if memory is short"
        ) from None
    finally:
        # after a failure or an interrupt, chunks not yet started are dropped rather than analysed for nothing
        pool.shutdown(wait=True, cancel_futures=True)
    return done, failed
