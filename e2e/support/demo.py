"""The demo page in a real browser: texts the shipped vocabularies flag without a model, submitting the form, and
waiting for the streamed result; shared by the browser tests of the demo, the reader pages and the languages."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

EN_TERM = "welfare queen"
# the writer's own claim: "The minister called … a …" reports the minister's naming, not flagged (docs/uses.md)
EN_TEXT = f"Every single mother on benefits is a {EN_TERM} who has never worked a day in her life."
TWO_TERMS = ("anchor babies", "welfare queen")

PERMALINK = re.compile(r"/analyses/([0-9a-f]{32})$")  # no named group: Playwright hands it to JavaScript
FINISHED = re.compile(r"Finished in \d+ ms")
# Vocabulary-only analyses finish in well under a second; the margin is for a loaded CI machine.
RESULT_TIMEOUT_MS = 20_000


def analyse(page: Page, base_url: str, text: str, lang: str = "") -> str:
    """Submits the demo form and returns the analysis id from the permalink the address bar switches to."""
    page.goto(base_url + "/")
    form = page.locator("form.analyse")
    form.locator("textarea#text").fill(text)
    form.locator("select#lang").select_option(lang)
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(PERMALINK, timeout=RESULT_TIMEOUT_MS)
    match = PERMALINK.search(page.url)
    assert match is not None
    return match[1]


def wait_until_done(page: Page, timeout: float = RESULT_TIMEOUT_MS) -> None:
    expect(page.locator("#done")).to_have_text(FINISHED, timeout=timeout)
