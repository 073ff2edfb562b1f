"""The ordered runner of `unerase analyze --input` and `unerase batch` (engine/cli/runner.py): bounded work in
flight, bounded results held, input order kept, nothing left running after a failure."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.cli.runner import LOOKAHEAD, run_in_order

from .support.paths import FIXTURES


class Recorder:
    """An `analyse` that takes a random short while per item and records how many run at once."""

    def __init__(self, seed: int = 7, fail_on: int | None = None) -> None:
        self.random = random.Random(seed)
        self.running = 0
        self.most = 0
        self.started: list[int] = []
        self.cancelled = 0
        self.fail_on = fail_on

    async def __call__(self, item: int) -> dict[str, Any]:
        self.started.append(item)
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await asyncio.sleep(self.random.random() / 200)
            if item == self.fail_on:
                raise RuntimeError(f"item {item} failed")
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        finally:
            self.running -= 1
        return {"id": item, "error": "odd"} if item % 2 else {"id": item}


def test_results_come_in_input_order_with_at_most_concurrency_in_flight() -> None:
    analyse, emitted = Recorder(), []
    counts = asyncio.run(run_in_order(range(100), analyse, emitted.append, concurrency=3))
    assert [r["id"] for r in emitted] == list(range(100))
    assert analyse.most == 3  # bounded, and the bound is used
    assert counts == (50, 50)  # analysed, errors (the odd items answered with an "error" key)


def test_items_are_read_only_as_far_as_the_lookahead_allows() -> None:
    """A stream (stdin) is not read ahead of what the window holds: one slow first item caps what is taken."""
    taken: list[int] = []
    release = asyncio.Event()

    def items() -> Iterator[int]:
        for n in range(1_000):
            taken.append(n)
            yield n

    async def analyse(item: int) -> dict[str, Any]:
        if item == 0:
            await release.wait()  # the oldest record is slow: everything else finishes behind it
        return {"id": item}

    async def run() -> tuple[int, int]:
        emitted: list[dict[str, Any]] = []
        task = asyncio.ensure_future(run_in_order(items(), analyse, emitted.append, concurrency=2))
        for _ in range(50):
            await asyncio.sleep(0)
        assert len(taken) == 2 * LOOKAHEAD and emitted == []  # the window is full; nothing more is read
        release.set()
        counts = await task
        assert [r["id"] for r in emitted] == list(range(1_000))
        return counts

    assert asyncio.run(run()) == (1_000, 0)


def test_a_failure_stops_the_run_and_cancels_what_is_in_flight() -> None:
    analyse, emitted = Recorder(fail_on=5), []
    with pytest.raises(RuntimeError, match="item 5 failed"):
        asyncio.run(run_in_order(range(100), analyse, emitted.append, concurrency=4))
    assert [r["id"] for r in emitted] == [0, 1, 2, 3, 4]
    assert analyse.running == 0  # nothing outlives the run
    assert len(analyse.started) < 100


def test_a_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="concurrency must be 1 or more, not 0"):
        asyncio.run(run_in_order([1], Recorder(), print, concurrency=0))


@pytest.mark.parametrize("command", ["analyze", "batch"])
def test_both_commands_refuse_a_concurrency_below_one_with_a_clear_message(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"id": 1, "text": "a junkie", "lang": "en"}\n', encoding="utf-8")
    args = ["--input", str(source)] if command == "analyze" else [str(source)]
    code = main([command, *args, "--vocab", str(FIXTURES / "vocab"), "--no-cache", "--concurrency", "0"])
    assert code == 2
    assert "--concurrency 0 is not accepted; give 1 or more" in capsys.readouterr().err
