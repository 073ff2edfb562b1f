"""The pages of moderators, archivists and admins in the browser's language (issue 16), in a real Chromium.

A French moderator logs in, reads the queue and an item, decides and sees the "saved" message in French, and a French
admin reads the sites page; a German admin adds a site and copies its snippet, opens its values page, the
evaluations and the quality page, and runs a batch to its report; a Greek moderator reads the longest pages on a
phone. Every page: `<html lang>` right, no sideways scrolling at 390 px, and axe-core finds nothing serious or
critical (axe is vendored in e2e/vendor and injected, so these contexts bypass the app's CSP for the test only).

The items are German analyses sent to the API whose word "Kartoffel" the vocabulary cannot settle without a
language model, so they wait for a moderator (as in e2e/test_moderation.py).
"""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import NewPage, StartServer, save_screenshot
from e2e.test_axe import AXE, BLOCKING, RUN_AXE
from e2e.test_moderation import analyse, deferred_text
from web.auth import Accounts
from web.db import make_engine
from web.i18n import catalogue

MODERATOR = "e2e-lang-moderator"
ADMIN = "e2e-lang-admin"
PASSWORD = "a passphrase long enough"
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
JOB_TIMEOUT_MS = 60_000
FR, DE, EL = catalogue("fr"), catalogue("de"), catalogue("el")


@pytest.fixture(scope="module")
def app(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    database = tmp_path_factory.mktemp("e2e-staff-languages") / "unerase.db"
    url = f"sqlite:///{database}"
    engine = make_engine(url)
    try:
        Accounts(engine).create(MODERATOR, PASSWORD, "moderator")
        Accounts(engine).create(ADMIN, PASSWORD, "admin")
    finally:
        engine.dispose()
    return start_server({"UNERASE_DATABASE_URL": url})


def open_in(new_page: NewPage, label: str, locale: str, viewport: dict[str, int]) -> Page:
    phone = viewport["width"] < 500
    return new_page(label, locale=locale, viewport=viewport, bypass_csp=True, is_mobile=phone, has_touch=phone)


def log_in(page: Page, app: str, path: str, words: dict[str, str], name: str) -> None:
    """Opens `path`, is sent to the login form (in the browser's language), logs in and lands back on `path`."""
    page.goto(app + path)
    expect(page).to_have_url(re.compile(re.escape(f"{app}/login?next=")))
    expect(page.locator("h1")).to_have_text(words["nav.login"])
    page.get_by_label(words["login.name"], exact=True).fill(name)
    page.get_by_label(words["login.password"]).fill(PASSWORD)
    page.locator("main").get_by_role("button", name=words["nav.login"]).click()
    expect(page).to_have_url(app + path)


def blocking_violations(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical findings on the page, in light and in dark colours."""
    found: list[dict[str, Any]] = []
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        page.wait_for_timeout(300)
        if not page.evaluate("typeof window.axe !== 'undefined'"):
            page.add_script_tag(path=AXE)
        found += [v for v in page.evaluate(RUN_AXE) if v["impact"] in BLOCKING]
    page.emulate_media(color_scheme="light")
    return found


def check_page(page: Page, lang: str, name: str) -> None:
    """The page's language, no sideways scrolling at its width, no serious axe finding; then a screenshot."""
    expect(page.locator("html")).to_have_attribute("lang", lang)
    words = catalogue(lang)
    switcher = page.get_by_role("navigation", name=words["language.label"])
    expect(switcher.locator(f'a[hreflang="{lang}"]')).to_have_attribute("aria-current", "true")
    viewport = page.viewport_size
    assert viewport is not None
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= viewport["width"], f"{name} is {width} px wide at {viewport['width']} px"
    violations = blocking_violations(page)
    assert not violations, f"{name}: " + "; ".join(f"[{v['impact']}] {v['id']}: {v['nodes']}" for v in violations)
    save_screenshot(page, name)


def test_a_french_moderator_reviews_in_french(new_page: NewPage, app: str) -> None:
    first, second = analyse(app, deferred_text("fr-one")), analyse(app, deferred_text("fr-two"))
    desktop = open_in(new_page, "fr-desktop", "fr-FR", DESKTOP)
    log_in(desktop, app, "/review", FR, MODERATOR)
    expect(desktop.locator("h1")).to_have_text(FR["review.h1"])
    expect(desktop.locator("table.review-queue th").first).to_have_text(FR["review.reason"])
    expect(desktop.get_by_role("button", name=re.compile("^" + re.escape(FR["review.approve"]))).first).to_be_visible()
    check_page(desktop, "fr", "review-fr-1280")

    desktop.goto(f"{app}/review/{first}")
    expect(desktop.locator("h1")).to_have_text(FR["item.h1"])
    expect(desktop.locator("#now-title")).to_have_text(FR["review.decide"])
    expect(desktop.locator("#action-flag")).to_have_text(FR["item.flag"])
    check_page(desktop, "fr", "review-item-fr-1280")
    desktop.locator("#action-flag").click()
    saved = FR["flash.saved"].format(what=FR["flash.saved.overturn"].format(label=FR["label.flagged"]))
    toast = desktop.locator("#review-flash")
    expect(toast).to_contain_text(saved)
    expect(toast.get_by_role("button", name=FR["flash.undo"])).to_be_visible()
    save_screenshot(desktop, "review-fr-saved")

    phone = open_in(new_page, "fr-phone", "fr-FR", PHONE)
    log_in(phone, app, "/review", FR, MODERATOR)
    expect(phone.locator("h1")).to_have_text(FR["review.h1"])
    check_page(phone, "fr", "review-fr-390")
    phone.goto(f"{app}/review/{second}")
    check_page(phone, "fr", "review-item-fr-390")
    phone.goto(f"{app}/review/decided")
    expect(phone.locator("h1")).to_have_text(FR["decided_view.h1"])
    check_page(phone, "fr", "review-decided-fr-390")

    # a French admin too: the sites page, and the form that adds one
    admin = open_in(new_page, "fr-admin-phone", "fr-FR", PHONE)
    log_in(admin, app, "/admin/sites", FR, ADMIN)
    expect(admin.locator("h1")).to_have_text(FR["sites.h1"])
    expect(admin.get_by_role("button", name=FR["sites.add_button"])).to_be_visible()
    check_page(admin, "fr", "admin-fr-390")


def three_rows(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "text"])
        writer.writerow(["r1", "Wir holen Kartoffeln für das Fest, und danach gehen wir alle zusammen spazieren."])
        writer.writerow(["r2", "Der Markt war heute Morgen voll, und die Bäckerei hatte um zehn kein Brot mehr."])
        writer.writerow(["r3", ""])  # a failed row, so the job page lists one
    return path


def test_a_german_admin_adds_a_site_and_runs_a_batch_in_german(new_page: NewPage, app: str, tmp_path: Path) -> None:
    page = open_in(new_page, "de-desktop", "de-DE", DESKTOP)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    log_in(page, app, "/admin/sites", DE, ADMIN)
    expect(page.locator("h1")).to_have_text(DE["sites.h1"])
    page.locator("#name-new").fill("Flussufer-Nachbarschaftsforum")
    page.locator("#origins-new").fill("https://flussufer.example")
    page.get_by_role("button", name=DE["sites.add_button"]).click()
    flash = page.get_by_role("status").filter(has_text=DE["sites.added"].format(name="Flussufer-Nachbarschaftsforum"))
    expect(flash).to_be_visible()
    flash.get_by_role("button", name=DE["sites.copy"]).click()
    expect(flash.locator(".copied")).to_have_text(DE["sites.copied"])
    check_page(page, "de", "admin-de-1280")
    key = page.url.split("added=", 1)[1].split("#", 1)[0]
    page.goto(f"{app}/admin/sites/{key}")
    expect(page.locator("#values-title")).to_have_text(DE["site.values"])
    check_page(page, "de", "admin-site-de-1280")
    page.goto(f"{app}/admin/evaluations")
    expect(page.locator("h1")).to_have_text(DE["evals.h1"])
    check_page(page, "de", "evaluations-de-1280")
    page.goto(f"{app}/review/quality")
    expect(page.locator("h1")).to_have_text(DE["quality.h1"])
    check_page(page, "de", "quality-de-1280")

    page.goto(app + "/batches")
    expect(page.locator("h1")).to_have_text(DE["batches.h1"])
    page.locator("input#file").set_input_files(three_rows(tmp_path / "zeilen.csv"))
    page.get_by_role("button", name=DE["batches.start"]).click()
    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}$"))
    expect(page.locator("#finished")).to_contain_text(DE["batch.complete"], timeout=JOB_TIMEOUT_MS)
    expect(page.locator("#failed-title")).to_have_text(DE["batch.failed_title"])
    check_page(page, "de", "batch-de-1280")
    job_url = page.url
    page.get_by_role("link", name=DE["batch.report"]).click()
    expect(page.locator("#records-title")).to_have_text(DE["report.records"])
    expect(page.locator("#charts-title")).to_have_text(DE["report.charts"])
    check_page(page, "de", "report-de-1280")

    phone = open_in(new_page, "de-phone", "de-DE", PHONE)
    log_in(phone, app, "/admin/sites", DE, ADMIN)
    check_page(phone, "de", "admin-de-390")
    pages = {
        "batches-de-390": app + "/batches",
        "batch-de-390": job_url,
        "report-de-390": job_url + "/report",
        "admin-site-de-390": f"{app}/admin/sites/{key}",
        "evaluations-de-390": f"{app}/admin/evaluations",
        "quality-de-390": f"{app}/review/quality",
    }
    for name, url in pages.items():
        phone.goto(url)
        check_page(phone, "de", name)


def test_a_greek_moderator_reads_the_longest_pages_on_a_phone(new_page: NewPage, app: str) -> None:
    item = analyse(app, deferred_text("el"))
    phone = open_in(new_page, "el-phone", "el-GR", PHONE)
    log_in(phone, app, f"/review/{item}", EL, MODERATOR)
    expect(phone.locator("h1")).to_have_text(EL["item.h1"])
    expect(phone.get_by_role("heading", name=EL["item.terms"])).to_be_visible()
    check_page(phone, "el", "review-item-el-390")
    phone.goto(app + "/review")
    check_page(phone, "el", "review-el-390")
    # the switcher moves a staff page to another language, as it does a reader's page
    phone.get_by_role("navigation", name=EL["language.label"]).get_by_role("link", name="Français").click()
    expect(phone.locator("h1")).to_have_text(FR["review.h1"])
    expect(phone.locator("html")).to_have_attribute("lang", "fr")
