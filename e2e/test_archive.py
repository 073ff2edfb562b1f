"""An archivist's batch in a real browser (issue 16): catalogue titles too short for language detection, the
language choice of the form, the report's table of records, its filters, and a subset downloaded as CSV.

The server has no language model and the shipped vocabularies: "The Junkie" is an ambiguous term (deferred to a
person without a model), "A Welfare Queen" an unambiguous one (flagged), the rest name nobody. Four of the titles
are words of English and German alike, so detection cannot tell their language; they used to fail.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import StartServer, save_screenshot

JOB_TIMEOUT_MS = 60_000
TITLES = {
    "t1": "The Idiot Boy",
    "t2": "Head of a Moor",
    "t3": "The Junkie",
    "t4": "Junkie Boy",
    "t5": "A Welfare Queen",
    "t6": "Portrait of a woman reading a letter",
    "t7": "=HYPERLINK(1) A Welfare Queen",
}
TIED = {"t1", "t2", "t3", "t4"}  # detection ties between English and German (checked through the API below)


@pytest.fixture
def catalogue(tmp_path: Path) -> Path:
    path = tmp_path / "catalogue.csv"
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["ref", "title"])
        writer.writerows(TITLES.items())
    return path


def upload(page: Page, server: str, path: Path, language: str = "") -> None:
    page.goto(server + "/batches")
    form = page.locator("form:has(input#file)")
    form.locator("input#file").set_input_files(path)
    form.get_by_label("Column with the text").fill("title")
    form.get_by_label("Column with record ids").fill("ref")
    expect(form.get_by_label("Column with language codes")).to_be_visible()
    form.get_by_label("Language of the texts").select_option(language)
    form.get_by_role("button", name="Start the job").click()
    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}$"))
    expect(page.locator("#finished")).to_contain_text("The job is complete.", timeout=JOB_TIMEOUT_MS)


def test_short_titles_fall_back_to_a_language_instead_of_failing(page: Page, server: str, catalogue: Path) -> None:
    response = page.request.post(server + "/api/v1/analyses", data={"text": TITLES["t2"]})
    assert response.status == 422 and "equally well" in response.json()["detail"]  # what used to happen per row

    page.goto(server + "/batches")
    hint = page.locator("#lang-hint")
    expect(hint).to_contain_text("it is analysed as en and its result says so")
    save_screenshot(page, "after-batches-form")
    upload(page, server, catalogue)
    expect(page.locator("#progress-area")).to_contain_text("7 of 7 rows · 0 with errors")
    expect(page.locator("p.meta")).to_contain_text("language detected (en when a text is too short to tell)")
    expect(page.locator("table.row-errors")).to_have_count(0)
    save_screenshot(page, "after-batch-job")

    page.locator("#finished a", has_text="Report").click()
    expect(page.locator("p.meta")).to_contain_text("4 in an assumed language (too short to tell)")
    rows = page.locator("table.report-records tbody tr")
    junkie = rows.filter(has_text="The Junkie")
    expect(junkie.locator("td").nth(2)).to_have_text("needs review")
    expect(junkie.locator("td").nth(4)).to_have_text("junkie")
    expect(junkie.locator("td").nth(6)).to_contain_text("language assumed en: the text fits several languages")


def test_the_chosen_language_is_used_for_every_record(page: Page, server: str, catalogue: Path) -> None:
    upload(page, server, catalogue, language="en")
    expect(page.locator("#progress-area")).to_contain_text("7 of 7 rows · 0 with errors")
    expect(page.locator("p.meta")).to_contain_text("language en")
    page.locator("#finished a", has_text="Report").click()
    expect(page.locator("p.meta")).not_to_contain_text("assumed language")
    languages = page.locator("table", has=page.locator("caption", has_text="Languages")).locator("tbody tr")
    expect(languages).to_have_count(1)
    expect(languages.first).to_contain_text("en")


def test_the_report_lists_records_filters_them_and_downloads_a_subset(page: Page, server: str, catalogue: Path) -> None:
    upload(page, server, catalogue)
    page.locator("#finished a", has_text="Report").click()
    for name in ("Downloads by outcome", "Records", "Charts", "Counts"):
        expect(page.get_by_role("heading", level=2, name=name)).to_be_visible()
    for name in ("Decisions", "Targeted characteristics", "Most frequent terms", "Languages"):
        expect(page.get_by_role("heading", level=3, name=name).first).to_be_visible()

    rows = page.locator("table.report-records tbody tr")
    # flagged or deferred, by default: the two welfare queens and the two junkies
    expect(rows).to_have_count(4)
    assert sorted(rows.locator("td:nth-child(2)").all_inner_texts()) == ["t3", "t4", "t5", "t7"]
    save_screenshot(page, "after-report")

    page.locator("select#r-term").select_option("welfare queen")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"term=welfare\+queen"))
    expect(rows).to_have_count(2)
    for cells in rows.locator("td:nth-child(5)").all_inner_texts():
        assert cells == "welfare queen"
    page.locator("select#r-label").select_option("needs_review")
    page.locator("select#r-term").select_option("")
    page.get_by_role("button", name="Filter").click()
    expect(rows).to_have_count(2)
    assert sorted(rows.locator("td:nth-child(2)").all_inner_texts()) == ["t3", "t4"]

    with page.expect_download() as download_info:
        page.locator("ul.subset-downloads li", has_text="Flagged").get_by_role("link", name="CSV").click()
    download = download_info.value
    assert download.suggested_filename.endswith("-flagged.csv"), download.suggested_filename
    with Path(download.path()).open(newline="", encoding="utf-8") as results:
        flagged = list(csv.DictReader(results))
    assert [(row["id"], row["label"], row["terms"]) for row in flagged] == [
        ("t5", "flagged", "welfare queen"),
        ("t7", "flagged", "welfare queen"),
    ]
    # the formula in t7's text never reaches a spreadsheet as a formula
    assert all(not cell.startswith(("=", "+", "-", "@")) for row in flagged for cell in row.values())


def test_failed_rows_are_listed_and_retried_with_a_language(
    page: Page, start_server: StartServer, catalogue: Path
) -> None:
    # a server whose batches have no fallback language: the short titles fail as they used to
    server = start_server({"UNERASE_BATCH_FALLBACK_LANGUAGE": ""})
    upload(page, server, catalogue)
    expect(page.locator("#progress-area")).to_contain_text("4 with errors")
    failed = page.locator("table.row-errors tbody tr")
    expect(failed).to_have_count(4)
    expect(page.locator("table.row-errors caption")).to_have_text("4 failed rows")
    moor = failed.filter(has_text="Head of a Moor")
    expect(moor.locator("td").nth(1)).to_have_text("t2")
    expect(moor.locator("td").nth(3)).to_contain_text("the text fits several languages equally well")
    save_screenshot(page, "after-batch-failed-rows")

    page.get_by_label("Analyse the failed rows again in").select_option("en")
    page.get_by_role("button", name="Retry the failed rows").click()
    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}\?retried=4$"))
    expect(page.get_by_role("status").filter(has_text="queued again")).to_contain_text("4 failed rows queued again")
    expect(page.locator("#finished")).to_contain_text("The job is complete.", timeout=JOB_TIMEOUT_MS)
    expect(page.locator("#progress-area")).to_contain_text("7 of 7 rows · 0 with errors")
    page.reload()
    expect(page.locator("table.row-errors")).to_have_count(0)
