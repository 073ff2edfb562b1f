"""/admin/evaluations in a browser: an admin uploads a labelled CSV, watches the progress and reads the report.

The server runs in vocabulary-only mode with the test vocabulary (tests/fixtures/vocab), so each row's decision
is known by construction (see tests/test_evaluation.py): "fag" is flagged, "crippled" cannot be decided without
a model (needs review), the other two texts have no term (not flagged).
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import PROJECT, StartServer, save_screenshot
from web.auth import Accounts
from web.db import make_engine

ADMIN = "e2e-admin"
PASSWORD = "an admin passphrase long enough"
ROWS = 1_000
# (text, label): per four rows one true flag, one true pass, one deferred acceptable text, one missed attack
PATTERN = [
    ("what a fag he is, row {n}", "hateful"),
    ("nice weather today, row {n}", "fine"),
    ("the storm crippled the town, row {n}", "fine"),
    ("you people are vermin, row {n}", "hateful"),
]
JOB_TIMEOUT_MS = 120_000


@pytest.fixture(scope="module")
def app(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    database = tmp_path_factory.mktemp("e2e-evaluations") / "unerase.db"
    url = f"sqlite:///{database}"
    engine = make_engine(url)
    try:
        Accounts(engine).create(ADMIN, PASSWORD, "admin")
    finally:
        engine.dispose()
    vocabularies = json.dumps([str(PROJECT / "tests" / "fixtures" / "vocab")])
    return start_server({"UNERASE_DATABASE_URL": url, "UNERASE_VOCABULARIES": vocabularies})


@pytest.fixture
def labelled(tmp_path: Path) -> Path:
    path = tmp_path / "moderated.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["post", "decision", "lang", "forum"])
        for n in range(ROWS):
            text, label = PATTERN[n % 4]
            writer.writerow([text.format(n=n), label, "en", "news" if n % 2 else "sports"])
    return path


def test_an_admin_uploads_a_labelled_csv_and_reads_the_report(page: Page, app: str, labelled: Path) -> None:
    # admin pages send a browser without a session to the login form, and back after it
    page.goto(app + "/admin/evaluations")
    expect(page).to_have_url(app + "/login?next=%2Fadmin%2Fevaluations")
    page.get_by_label("Name").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(app + "/admin/evaluations")

    page.locator("#e-file").set_input_files(labelled)
    page.locator("#e-text").fill("post")
    page.locator("#e-label").fill("decision")
    page.locator("#e-positive").fill("hateful")
    page.locator("#e-negative").fill("fine")
    page.locator("#e-lang").fill("lang")
    page.locator("#e-group").fill("forum")
    page.locator("#e-review").select_option("separate")
    page.get_by_role("button", name="Evaluate").click()

    expect(page).to_have_url(re.compile(r"/admin/evaluations/[0-9a-f]{32}$"))
    expect(page.locator("h1")).to_contain_text("moderated.csv")
    # the progress bar is driven by the stream until every row is analysed, then the report replaces the hint
    expect(page.locator("progress#job-progress")).to_have_attribute("value", "100", timeout=JOB_TIMEOUT_MS)
    expect(page.locator("#progress-area")).to_contain_text(f"{ROWS:,} of {ROWS:,} rows")
    report = page.locator("#eval-report")
    expect(report).to_be_visible(timeout=JOB_TIMEOUT_MS)

    # separate: the 250 deferred rows are set aside; of 750 decided, 250 true flags, 250 passes, 250 missed
    figures = page.locator("#eval-figures")
    expect(figures.locator('td[data-figure="rows"]')).to_have_text("1000")
    expect(figures.locator('td[data-figure="counted"]')).to_have_text("750")
    expect(figures.locator('td[data-figure="precision"]')).to_have_text("100.0%")
    expect(figures.locator('td[data-figure="recall"]')).to_have_text("50.0%")
    expect(figures.locator('td[data-figure="f1"]')).to_have_text("66.7%")
    expect(figures.locator('td[data-figure="deferral_rate"]')).to_have_text("25.0%")
    expect(report.locator("svg.chart").first).to_be_visible()
    assert report.locator("svg.chart").count() == 3  # outcomes, per language, per group
    expect(report.locator("table.eval-breakdown", has_text="By group")).to_contain_text("sports")
    expect(report.locator("ul.eval-errors").last).to_contain_text("you people are vermin")
    save_screenshot(page, "evaluation-report")

    # the evaluation is listed with the configuration it ran with
    page.locator("a", has_text="← Evaluations").click()
    row = page.locator("#past-evaluations tbody tr").first
    expect(row).to_contain_text("moderated.csv")
    expect(row).to_contain_text("vocabulary-only")
    expect(row).to_contain_text("P 100.0% · R 50.0% · F1 66.7%")
