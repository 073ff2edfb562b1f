"""Housekeeping: each purge at its own interval, the first at once; one that fails is logged and stops no other."""

from __future__ import annotations

import logging

import pytest

from web.upkeep import Upkeep

from .support.databases import Clock


def test_each_purge_runs_at_its_own_interval_and_a_failure_stops_no_other(caplog: pytest.LogCaptureFixture) -> None:
    clock, ran = Clock(), []

    def often() -> int:
        ran.append("often")
        return 2

    def hourly() -> int:
        ran.append("hourly")
        return 1

    def broken() -> int:
        raise RuntimeError("the database went away")

    upkeep = Upkeep([(often, 60.0), (broken, 60.0), (hourly, 3600.0)], clock=clock)
    with caplog.at_level(logging.ERROR, logger="web.upkeep"):
        assert upkeep.purge() == 3
    assert ran == ["often", "hourly"] and "the database went away" in caplog.text
    clock.advance(59.0)
    assert upkeep.purge() == 0
    clock.advance(1.0)
    assert upkeep.purge() == 2
    clock.advance(3540.0)
    assert upkeep.purge() == 3 and ran == ["often", "hourly", "often", "often", "hourly"]
