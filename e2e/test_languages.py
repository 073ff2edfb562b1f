"""The reader pages in the reader's language, in a real browser: a French Chromium gets French chrome, the result
streams in French, and the switcher (plain links, no script) moves the pages to German and keeps them there."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from e2e.conftest import NewPage, save_screenshot
from e2e.support.demo import EN_TEXT, PERMALINK, RESULT_TIMEOUT_MS
from web.i18n import catalogue

FR, DE = catalogue("fr"), catalogue("de")


def test_a_french_browser_reads_french_and_switches_to_german(server: str, new_page: NewPage) -> None:
    page = new_page("fr", locale="fr-FR")
    page.goto(server + "/")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.locator("h1")).to_have_text(FR["demo.h1"])
    switcher = page.get_by_role("navigation", name=FR["language.label"])
    expect(switcher.get_by_role("link", name="Français")).to_have_attribute("aria-current", "true")

    page.locator("textarea#text").fill(EN_TEXT)
    page.locator("select#lang").select_option("en")
    page.get_by_role("button", name=FR["demo.analyse"]).click()
    expect(page).to_have_url(PERMALINK, timeout=RESULT_TIMEOUT_MS)
    finished = re.compile(re.escape(FR["done"]).replace(r"\{ms\}", r"\d+"))
    expect(page.locator("#done")).to_have_text(finished, timeout=RESULT_TIMEOUT_MS)
    expect(page.locator("#result-title")).to_have_text(FR["result.title"])
    expect(page.locator("#result-title")).to_be_focused()
    expect(page.locator("#decision h3")).to_have_text(FR["decision"] + FR["colon"] + FR["decision.flagged"])
    expect(page.locator("#stage-decision .stage-state")).to_have_text(FR["state.done"])
    expect(page.locator("#announce")).to_have_text(FR["announce.finished"])
    expect(page.locator(".term-card dt").first).to_have_text(FR["card.what"])
    save_screenshot(page, "languages-french-result")

    page.get_by_role("navigation", name=FR["language.label"]).get_by_role("link", name="Deutsch").click()
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("h1")).to_have_text(DE["analysis.h1"])
    expect(page.locator("#decision h3")).to_have_text(DE["decision"] + DE["colon"] + DE["decision.flagged"])
    switcher = page.get_by_role("navigation", name=DE["language.label"])
    expect(switcher.get_by_role("link", name="Deutsch")).to_have_attribute("aria-current", "true")
    # the choice sticks (a cookie) although the browser still asks for French
    page.goto(server + "/")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("h1")).to_have_text(DE["demo.h1"])
