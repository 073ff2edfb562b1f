"""Checks on an engine event stream (engine.events) shared by the orchestration tests."""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import Event


def types(events: Sequence[Event]) -> list[str]:
    return [e.type for e in events]


def check_order(events: Sequence[Event]) -> None:
    kinds = types(events)
    assert kinds[0] == "analysis"
    assert kinds[-2:] == ["decision", "done"]
    hit_positions = [i for i, k in enumerate(kinds) if k == "hit"]
    verdict_positions = [i for i, k in enumerate(kinds) if k == "verdict"]
    if hit_positions and verdict_positions:
        assert max(hit_positions) < min(verdict_positions)
    assert kinds.count("decision") == 1 and kinds.count("done") == 1 and kinds.count("explanation") == 1


def by_type(events: Sequence[Event], kind: type) -> list:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, kind)]
