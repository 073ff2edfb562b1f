"""A batch job through the pages: upload a 1,000-row CSV, follow its progress, read the report, download results.

The server has no language model, so each row's decision comes from the vocabulary alone and the report's
counts are known in advance: rows with a listed, unambiguous term are flagged, the others are not.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import save_screenshot

ROWS = 1_000
EMPTY_ROW = 417  # index of the row whose text is empty; it becomes a row error
TERM = "welfare queen"
WITH_TERM = "Row {n}: she is just another " + TERM + " who wants the rest of us to pay her rent."
WITHOUT_TERM = "Row {n}: the market was busy this morning and the bakery sold out of bread by ten."
# 1,000 vocabulary-only analyses take a few seconds; a loaded CI machine gets plenty of margin.
JOB_TIMEOUT_MS = 120_000


def has_term(index: int) -> bool:
    return index % 3 == 0


def csv_line(index: int) -> int:
    return index + 2  # line 1 is the header


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    """ROWS records with the columns id,text: every third one with a vocabulary term, one with no text."""
    path = tmp_path / "posts.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "text"])
        for index in range(ROWS):
            template = "" if index == EMPTY_ROW else WITH_TERM if has_term(index) else WITHOUT_TERM
            writer.writerow([f"post-{index:04d}", template.format(n=index)])
    return path


def expected_decisions() -> dict[str, int]:
    analysed = [index for index in range(ROWS) if index != EMPTY_ROW]
    flagged = sum(1 for index in analysed if has_term(index))
    return {"flagged": flagged, "not_flagged": len(analysed) - flagged}


def table_counts(page: Page, caption: str) -> dict[str, int]:
    table = page.locator("table", has=page.locator("caption", has_text=caption))
    expect(table).to_have_count(1)
    counts = {}
    for row in table.locator("tbody tr").all():
        name, count = (cell.inner_text().strip() for cell in row.locator("td").all())
        counts[name] = int(count.replace(",", ""))
    return counts


def test_a_csv_batch_runs_to_a_report_and_a_download(page: Page, server: str, upload: Path) -> None:
    page.goto(server + "/batches")
    form = page.locator("form:has(input#file)")
    form.locator("input#file").set_input_files(upload)
    form.locator("input#text_column").fill("text")
    form.locator("input#id_column").fill("id")
    form.locator("button[type=submit]").click()

    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}$"))
    expect(page.locator("h1")).to_contain_text(upload.name)
    expect(page.locator("progress#job-progress")).to_have_attribute("value", "100", timeout=JOB_TIMEOUT_MS)
    expect(page.locator("#finished")).to_contain_text("The job is complete.", timeout=JOB_TIMEOUT_MS)
    expect(page.locator("#progress-area")).to_contain_text(f"{ROWS:,} of {ROWS:,} rows")
    error_cells = page.locator("table.row-errors tbody tr td")
    expect(page.locator("table.row-errors tbody tr")).to_have_count(1)
    expect(error_cells.nth(0)).to_have_text(str(csv_line(EMPTY_ROW)))
    expect(error_cells.nth(1)).to_have_text(f"post-{EMPTY_ROW:04d}")
    save_screenshot(page, "batch-complete")

    page.locator("#finished a", has_text="Report").click()
    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}/report$"))
    expect(page.locator("svg.chart").first).to_be_visible()
    assert page.locator("svg.chart").count() >= 2, "the report should chart decisions and terms at least"
    decisions = expected_decisions()
    # the report names decisions in words ("not flagged"); the CSV keeps the labels
    assert table_counts(page, "Decisions") == {name.replace("_", " "): count for name, count in decisions.items()}
    assert table_counts(page, "Terms") == {TERM: decisions["flagged"]}
    save_screenshot(page, "batch-report")

    with page.expect_download() as download_info:
        page.locator("p.meta a", has_text="CSV").click()
    download = download_info.value
    assert download.suggested_filename.endswith(".csv"), download.suggested_filename
    with Path(download.path()).open(newline="", encoding="utf-8") as results:
        rows = list(csv.DictReader(results))
    assert len(rows) == ROWS
    assert [row["id"] for row in rows] == [f"post-{index:04d}" for index in range(ROWS)]
    empty = rows[EMPTY_ROW]
    assert empty["line"] == str(csv_line(EMPTY_ROW)) and empty["error"], empty
    labels = [row["label"] for index, row in enumerate(rows) if index != EMPTY_ROW]
    assert labels.count("flagged") == decisions["flagged"]
    assert labels.count("not_flagged") == decisions["not_flagged"]
