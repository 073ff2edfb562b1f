"""axe-core on every page type (issue 16): no serious or critical violation anywhere.

One walk through the app as its users would take it, because later pages need what earlier ones made: a reader's
demo analysis (empty page, streamed result, permalink, statement of reasons), the demo forum with a widget panel
open (which also leaves items in the review queue), an archivist's batch (list, job page, report), and a signed-in
admin's pages (login, review queue, item and decided view, quality, admin sites and one site). Each page is checked
in light and in dark colour schemes at desktop width; the problems of all pages are reported together.

axe-core is vendored in e2e/vendor (README there); it is injected into the page, so the browser context bypasses
the app's Content-Security-Policy for the test only.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from e2e.conftest import StartServer, save_screenshot
from e2e.support.demo import EN_TEXT, analyse, wait_until_done
from e2e.support.widget import TOKEN, register_site
from web.auth import Accounts
from web.db import make_engine

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core-4.14.1.min.js"
ADMIN = "e2e-axe-admin"
PASSWORD = "a passphrase long enough"
BLOCKING = ("serious", "critical")
FLAGGED_POST = "potholes-grumble"
JOB_TIMEOUT_MS = 60_000
WIDGET_TIMEOUT_MS = 60_000

RUN_AXE = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map((n) => n.target.join(" ") + " :: " + (n.failureSummary || "").replace(/\\s+/g, " ")),
  }));
}"""


@pytest.fixture(scope="module")
def app(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    database = tmp_path_factory.mktemp("e2e-axe") / "unerase.db"
    url = f"sqlite:///{database}"
    engine = make_engine(url)
    try:
        Accounts(engine).create(ADMIN, PASSWORD, "admin")
    finally:
        engine.dispose()
    # the demo page's analyses go to the review queue here, each one as a spot check, so that the queue and an item
    # page have something to show whatever the vocabulary decides
    return start_server(
        {
            "UNERASE_ADMIN_TOKEN": TOKEN,
            "UNERASE_DATABASE_URL": url,
            "UNERASE_REVIEW_DEMO_ANALYSES": "true",
            "UNERASE_SPOT_CHECK_PERCENT": "100",
        }
    )


class Audit:
    """Runs axe on pages and keeps what it found, per page and colour scheme."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.found: dict[str, list[dict[str, Any]]] = {}
        self.pages: list[str] = []

    def check(self, name: str) -> None:
        self.pages.append(name)
        for scheme in ("light", "dark"):
            self.page.emulate_media(color_scheme=scheme)
            # the widget's colours change with a short transition, which axe would otherwise catch half-way
            self.page.wait_for_timeout(400)
            if not self.page.evaluate("typeof window.axe !== 'undefined'"):
                self.page.add_script_tag(path=AXE)
            violations: list[dict[str, Any]] = self.page.evaluate(RUN_AXE)
            if violations:
                self.found[f"{name} ({scheme})"] = violations
        self.page.emulate_media(color_scheme="light")
        save_screenshot(self.page, f"axe-{name}")

    def blocking(self) -> dict[str, list[dict[str, Any]]]:
        return {
            name: [v for v in violations if v["impact"] in BLOCKING]
            for name, violations in self.found.items()
            if any(v["impact"] in BLOCKING for v in violations)
        }

    def report(self, violations: dict[str, list[dict[str, Any]]]) -> str:
        lines = []
        for name, found in violations.items():
            lines.append(f"{name}:")
            lines += [f"  [{v['impact']}] {v['id']}: {v['help']}\n    " + "\n    ".join(v["nodes"]) for v in found]
        return "\n".join(lines)


@pytest.fixture
def audit(browser: Browser, request: pytest.FixtureRequest) -> Iterator[Audit]:
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-GB", bypass_csp=True)
    context.set_default_timeout(15_000)
    try:
        yield Audit(context.new_page())
    finally:
        context.close()


def small_csv(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "text"])
        writer.writerow(["r1", EN_TEXT])
        writer.writerow(["r2", "The market was busy this morning and the bakery sold out of bread by ten."])
        writer.writerow(["r3", ""])  # a row error, so the job page shows its error table too
    return path


def test_no_page_type_has_a_serious_or_critical_violation(audit: Audit, app: str, tmp_path: Path) -> None:
    page = audit.page
    # a reader on the demo page
    page.goto(app + "/")
    audit.check("demo-empty")
    analysis_id = analyse(page, app, EN_TEXT)
    wait_until_done(page)
    audit.check("demo-result")
    page.goto(f"{app}/analyses/{analysis_id}")
    audit.check("permalink")
    page.goto(f"{app}/analyses/{analysis_id}/statement")
    audit.check("statement")
    save_screenshot(page, "after-statement")  # pairs with before-statement.png

    # a reader on the demo forum, with a widget panel and its terms open
    page.goto(app + "/demo/forum")
    widget = page.locator(f'[data-unerase-id="{FLAGGED_POST}"] + [data-unerase-widget]')
    widget.get_by_role("button", name="Why flagged?").click(timeout=WIDGET_TIMEOUT_MS)
    expect(widget.locator('[role="dialog"] details summary').first).to_be_visible()
    widget.locator('[role="dialog"] details summary').first.click()
    audit.check("forum-widget-open")

    # an archivist's batch
    page.goto(app + "/batches")
    audit.check("batches")
    form = page.locator("form:has(input#file)")
    form.locator("input#file").set_input_files(small_csv(tmp_path / "three.csv"))
    form.locator("input#text_column").fill("text")
    form.locator("input#id_column").fill("id")
    form.locator("button[type=submit]").click()
    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}$"))
    expect(page.locator("#finished")).to_contain_text("The job is complete.", timeout=JOB_TIMEOUT_MS)
    audit.check("batch")
    page.locator("#finished a", has_text="Report").click()
    expect(page).to_have_url(re.compile(r"/batches/[0-9a-f]{32}/report$"))
    audit.check("batch-report")

    # an admin (who may do what moderators do)
    key = register_site(app, ["https://forum.example"])
    page.goto(app + "/login")
    audit.check("login")
    page.get_by_label("Name").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("header.site").get_by_role("button", name="Log out")).to_be_visible()
    page.goto(app + "/review")
    audit.check("review-queue")
    item = page.evaluate(
        "() => Array.from(document.querySelectorAll('main a'), (a) => a.getAttribute('href'))"
        ".find((href) => /^\\/review\\/[0-9a-f]{32}/.test(href || ''))"
    )
    assert item, "the review queue lists no item: the demo page's spot-checked analyses should be there"
    page.goto(app + item)
    audit.check("review-item")
    page.goto(app + "/review/decided")
    audit.check("review-decided")
    page.goto(app + "/review/quality")
    audit.check("quality")
    page.goto(app + "/admin/sites")
    audit.check("admin-sites")
    page.goto(f"{app}/admin/sites/{key}")
    audit.check("admin-site")

    assert len(audit.pages) == 15
    if audit.found:  # minor and moderate ones do not fail the test but are worth reading in the log
        print("axe-core findings (all impacts):\n" + audit.report(audit.found))
    blocking = audit.blocking()
    assert not blocking, "axe-core found serious or critical violations:\n" + audit.report(blocking)
