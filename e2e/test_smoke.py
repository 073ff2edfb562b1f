"""Smoke test: the demo page loads, analyses an English text and marks the vocabulary term in place."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import StartServer

# A term of the shipped English vocabulary (issue en-welfare-queen) that is not marked ambiguous.
TERM = "welfare queen"
TEXT = f"The minister called every single mother on benefits a {TERM} who has never worked a day in her life."


def test_demo_page_marks_a_vocabulary_term(page: Page, server: str) -> None:
    page.goto(server + "/")
    assert "unerase" in page.title()

    form = page.locator("form:has(textarea#text)")
    form.locator("textarea#text").fill(TEXT)
    form.locator("[type=submit]").click()

    # The demo may answer with a new page or stream its result in; either way the hit has to show up.
    hit = page.locator(".hit", has_text=TERM).first
    expect(hit).to_be_visible(timeout=20_000)
    expect(hit).to_contain_text(TERM)


def test_a_server_that_cannot_start_is_reported_with_its_stderr(start_server: StartServer) -> None:
    with pytest.raises(pytest.fail.Exception) as failure:
        start_server({"UNERASE_PORT": "not-a-port"})
    message = str(failure.value)
    assert "`python -m web` exited with code 1" in message
    assert "--- server stderr ---" in message
    assert "not-a-port" in message  # pydantic's complaint about the setting, read from the server's stderr
