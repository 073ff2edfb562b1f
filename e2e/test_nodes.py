"""Two readers on two nodes (issue 18): a reader analyses a text on the demo page of node A while another opens its
permalink on node B mid-analysis; both pages stream the same result to the end, and the analysis ran once.

Two real app processes on one PostgreSQL schema (tests/support/app_process.py) and a SCRIPTED stand-in for an
OpenAI-compatible model server (tests/support/scripted_server.py), NOT a model: it answers slowly, so the analysis
is still running when the second reader arrives, and it counts what it was asked.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from e2e.conftest import NewPage, save_screenshot
from e2e.support.demo import analyse, wait_until_done
from tests.postgres import database_url_or_skip, fresh_schema_url
from tests.support.app_process import app_processes
from tests.support.scripted_server import scripted_model_server

TEXT = "The minister called every single mother on benefits a welfare queen, and their children anchor babies."
WAIT_MS = 90_000  # a shared, loaded machine; the scripted answers take 2 s each


@pytest.mark.postgres
def test_a_reader_on_another_node_follows_the_same_analysis(new_page: NewPage, tmp_path: Path) -> None:
    with (
        scripted_model_server(delay=2.0) as model,
        fresh_schema_url(database_url_or_skip()) as schema,
        app_processes(tmp_path, model.environment(UNERASE_DATABASE_URL=schema.url, UNERASE_MODE="thorough")) as (
            a,
            b,
        ),
    ):
        first = new_page("node-a")
        analysis_id = analyse(first, a.url, TEXT, lang="en")
        second = new_page("node-b")
        second.goto(f"{b.url}/analyses/{analysis_id}")
        expect(second.locator("#result-section")).to_contain_text("welfare queen", timeout=WAIT_MS)
        save_screenshot(second, "nodes-b-following")
        wait_until_done(first, WAIT_MS)
        wait_until_done(second, WAIT_MS)
        decision_a = first.locator("#decision").inner_text()
        decision_b = second.locator("#decision").inner_text()
        assert decision_a == decision_b and decision_a.strip()
        # one analysis's questions: targeting and one per term, each asked once whichever node the readers reached
        assert set(model.questions().values()) == {1}
        assert sorted(stage for stage, _ in model.questions()) == ["disambiguation", "disambiguation", "targeting"]
