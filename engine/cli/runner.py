"""Many records analysed at once, their results written in input order: `unerase analyze --input` and
`unerase batch` both run through `run_in_order`.

Two bounds keep a run of any length flat in memory: at most `concurrency` records are being analysed, and at
most `concurrency * LOOKAHEAD` results wait behind the oldest unfinished one (one slow record holds back the
ordered output, so finished results queue up behind it). Records are taken from `items` only as room frees
up, so a JSONL stream on stdin is read as it is analysed.

`analyse` is where the work happens: in this process today, with the Analyzer of the command. A pool of
worker processes (`--jobs N`) plugs in here as another `analyse`, one that hands the record to a worker and
awaits its result; records and results are plain data (a parsed line or `engine.batch.Record`, a JSON-ready
dict) so they can cross a process boundary as they are.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

Item = TypeVar("Item")
Result = dict[str, Any]  # one record's result (engine.result.record) or its error: {"id", "line", "error"}

# How far finished results may run ahead of the oldest unfinished one, in multiples of `concurrency`.
LOOKAHEAD = 4


async def run_in_order(
    items: Iterable[Item],
    analyse: Callable[[Item], Awaitable[Result]],
    emit: Callable[[Result], object],
    *,
    concurrency: int,
) -> tuple[int, int]:
    """Every item analysed, at most `concurrency` at a time, and its result emitted in input order.
    Returns how many results were analysed and how many were errors (a result with an "error" key)."""
    if concurrency < 1:
        raise ValueError(f"concurrency must be 1 or more, not {concurrency}")
    counts = [0, 0]
    slots = asyncio.Semaphore(concurrency)
    window: deque[asyncio.Task[Result]] = deque()

    async def one(item: Item) -> Result:
        async with slots:
            return await analyse(item)

    async def emit_oldest() -> None:
        result = await window.popleft()
        counts[1 if "error" in result else 0] += 1
        emit(result)

    try:
        for item in items:
            window.append(asyncio.ensure_future(one(item)))
            if len(window) >= concurrency * LOOKAHEAD:
                await emit_oldest()
        while window:
            await emit_oldest()
    finally:
        # after a failure (or an interrupt) the unfinished analyses must not outlive the event loop
        for task in window:
            task.cancel()
        await asyncio.gather(*window, return_exceptions=True)
    return counts[0], counts[1]
