"""Moderators and admins in a real browser (issue 16): the "saved" toast and its undo, decisions from the queue
list, the decided view and its filters, the decision panel beside the text (and no sideways scrolling on a
phone), and the admin pages' login redirect, confirmation and copyable embed snippet.

The server has no language model and no admin token: the items are analyses sent to the API whose German word
"Kartoffel" (a slur for Germans, and the everyday word for potato) the vocabulary cannot settle alone, so they
wait for a moderator. Accounts are made in the database before the server starts. Each test sends texts of its
own and looks for them, so the tests do not depend on one another's order.
"""

from __future__ import annotations

import json
import re
import urllib.request
import uuid

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import NewPage, StartServer, save_screenshot
from web.auth import Accounts
from web.db import make_engine

MODERATOR = "e2e-moderator"
ADMIN = "e2e-admin"
PASSWORD = "a passphrase long enough"
PHONE = {"width": 390, "height": 844}

_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture(scope="module")
def app(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    database = tmp_path_factory.mktemp("e2e-moderation") / "unerase.db"
    url = f"sqlite:///{database}"
    engine = make_engine(url)
    try:
        Accounts(engine).create(MODERATOR, PASSWORD, "moderator")
        Accounts(engine).create(ADMIN, PASSWORD, "admin")
    finally:
        engine.dispose()
    return start_server({"UNERASE_DATABASE_URL": url})


def deferred_text(label: str) -> str:
    """A German sentence the vocabulary defers, told apart from the others by a random tag."""
    return f"Wir holen Kartoffeln für das Fest ({label} {uuid.uuid4().hex[:6]})."


def analyse(app: str, text: str) -> str:
    request = urllib.request.Request(
        f"{app}/api/v1/analyses",
        data=json.dumps({"text": text, "lang": "de"}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with _direct.open(request, timeout=30) as response:
        analysis_id: str = json.loads(response.read())["id"]
    return analysis_id


def log_in(page: Page, app: str, path: str, name: str = MODERATOR) -> None:
    """Opens `path`, is sent to the login form, logs in and lands back on `path`."""
    page.goto(app + path)
    expect(page).to_have_url(re.compile(re.escape(f"{app}/login?next=")))
    page.get_by_label("Name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(app + path)


def test_undo_after_a_decision(page: Page, app: str) -> None:
    text = deferred_text("undo")
    item = analyse(app, text)
    log_in(page, app, f"/review/{item}")
    expect(page.locator("#review-state")).to_contain_text("Label: needs review")
    page.wait_for_load_state()  # the shortcuts are in a deferred script
    page.keyboard.press("f")

    toast = page.locator("#review-flash")
    expect(toast).to_be_visible()
    expect(toast).to_contain_text("Saved: you decided “flagged”.")
    expect(toast).to_have_class(re.compile(r"\btoast\b"))  # review.js made the message a toast
    box = toast.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 900, "the toast is at the bottom of the viewport"
    save_screenshot(page, "after-review-saved-toast")

    toast.get_by_role("button", name="Undo (u)").click()
    expect(page).to_have_url(re.compile(re.escape(f"{app}/review/{item}?") + r".*undone="))
    expect(page.locator("#review-flash")).to_contain_text(
        "Undone: the label is “needs review” again, decided by the automatic analysis."
    )
    expect(page.locator("#review-state")).to_contain_text("Label: needs review, decided by the automatic analysis")
    history = page.locator("ol.review-history li")
    expect(history).to_have_count(2)
    expect(history.nth(0)).to_contain_text(f"{MODERATOR} · overturn: label flagged")
    expect(history.nth(1)).to_contain_text(f"{MODERATOR} · undo: label needs review")


def test_the_toast_goes_away_by_itself_and_the_key_u_undoes(page: Page, app: str) -> None:
    first, second = analyse(app, deferred_text("keys-a")), analyse(app, deferred_text("keys-b"))
    log_in(page, app, f"/review/{second}")
    page.wait_for_load_state()
    page.keyboard.press("n")
    toast = page.locator("#review-flash")
    expect(toast).to_contain_text("Saved: you decided “not flagged”.")
    page.keyboard.press("u")  # the shortcut for the toast's button
    expect(page.locator("#review-flash")).to_contain_text("Undone:")
    expect(page.locator("#review-state")).to_contain_text("needs review")
    page.keyboard.press("n")
    expect(page.locator("#review-flash")).to_be_visible()
    expect(page.locator("#review-flash")).to_be_hidden(timeout=15_000)  # after about ten seconds
    assert first  # the first item only gives the queue a next item to land on


def test_saved_and_undo_work_without_javascript(new_page: NewPage, app: str) -> None:
    page = new_page("no-js", java_script_enabled=False)
    item = analyse(app, deferred_text("no-js"))
    log_in(page, app, f"/review/{item}")
    page.locator("#action-flag").click()
    message = page.locator("#review-flash")
    expect(message).to_contain_text("Saved: you decided “flagged”.")
    expect(message).not_to_have_class(re.compile(r"\btoast\b"))  # a plain message at the top of the page
    message.get_by_role("button", name="Undo (u)").click()
    expect(page.locator("#review-flash")).to_contain_text("Undone: the label is “needs review” again")
    expect(page.locator("#review-state")).to_contain_text("Label: needs review, decided by the automatic analysis")


def test_actions_from_the_queue_list(page: Page, app: str) -> None:
    approve, reject = deferred_text("approve"), deferred_text("reject")
    analyse(app, approve)
    analyse(app, reject)
    log_in(page, app, "/review")
    tag_of = {text: text.split("(")[1].rstrip(").") for text in (approve, reject)}
    row = page.locator("table.review-queue tbody tr", has_text=tag_of[approve])
    expect(row).to_have_count(1)
    save_screenshot(page, "after-review-queue")
    row.get_by_role("button", name=re.compile("^Approve")).click()
    expect(page).to_have_url(re.compile(re.escape(f"{app}/review?done=")))
    expect(page.locator("#review-flash")).to_contain_text("Saved: you decided “not flagged”.")
    expect(page.locator("table.review-queue tbody tr", has_text=tag_of[approve])).to_have_count(0)

    row = page.locator("table.review-queue tbody tr", has_text=tag_of[reject])
    row.get_by_role("button", name=re.compile("^Reject")).click()
    expect(page.locator("#review-flash")).to_contain_text("Saved: you decided “flagged”.")
    expect(page.locator("table.review-queue tbody tr", has_text=tag_of[reject])).to_have_count(0)

    page.get_by_role("link", name="Decided", exact=True).click()
    expect(page).to_have_url(f"{app}/review/decided")
    for text, label in ((approve, "not flagged"), (reject, "flagged")):
        decided = page.locator("table.review-decided tbody tr", has_text=tag_of[text])
        expect(decided).to_have_count(1)
        expect(decided.locator("td").nth(1)).to_have_text(MODERATOR)
        expect(decided.locator("td").nth(2)).to_have_text(label)


def test_the_decided_view_filters_and_leads_back_to_the_item(page: Page, app: str) -> None:
    flagged, cleared = deferred_text("decided-f"), deferred_text("decided-n")
    flagged_id, cleared_id = analyse(app, flagged), analyse(app, cleared)
    log_in(page, app, f"/review/{flagged_id}")
    page.locator("#action-flag").click()
    page.goto(f"{app}/review/{cleared_id}")
    page.locator("#action-clear").click()

    page.goto(f"{app}/review/decided")
    page.get_by_label("Label").select_option("flagged")
    page.get_by_label("Moderator").fill(MODERATOR)
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"/review/decided\?label=flagged&moderator=" + MODERATOR))
    rows = page.locator("table.review-decided tbody tr")
    expect(rows.filter(has_text=flagged.split("(")[1].rstrip(")."))).to_have_count(1)
    expect(rows.filter(has_text=cleared.split("(")[1].rstrip(")."))).to_have_count(0)
    for label in rows.locator("td:nth-child(3)").all_inner_texts():
        assert label == "flagged"
    save_screenshot(page, "after-review-decided")
    rows.filter(has_text=flagged.split("(")[1].rstrip(").")).get_by_role("link").click()
    expect(page).to_have_url(f"{app}/review/{flagged_id}")
    expect(page.locator("#review-state")).to_contain_text(f"Label: flagged, decided by moderator {MODERATOR}")


def test_the_decision_panel_sits_beside_the_text_and_a_phone_never_scrolls_sideways(
    page: Page, new_page: NewPage, app: str
) -> None:
    item = analyse(app, deferred_text("layout"))
    log_in(page, app, f"/review/{item}")
    text_box = page.locator(".review-text").bounding_box()
    panel_box = page.locator("#review-form").bounding_box()
    assert text_box is not None and panel_box is not None
    assert panel_box["x"] >= text_box["x"] + text_box["width"], "the panel is to the right of the text"
    assert panel_box["y"] < 900, f"the decision buttons start within the first screen, not at {panel_box['y']:.0f} px"
    save_screenshot(page, "after-review-item")

    phone = new_page("phone", viewport=PHONE, is_mobile=True, has_touch=True)
    log_in(phone, app, f"/review/{item}")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the item page is {width} px wide at {PHONE['width']} px"
    text_box = phone.locator(".review-text").bounding_box()
    panel_box = phone.locator("#review-form").bounding_box()
    terms = phone.get_by_role("heading", name="Terms").bounding_box()
    assert text_box is not None and panel_box is not None and terms is not None
    assert text_box["y"] < panel_box["y"] < terms["y"], "on a phone the panel follows the text, before the terms"
    for selector in ("#review-form", ".review-text"):
        box = phone.locator(selector).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], selector
    save_screenshot(phone, "after-review-item-390")
    phone.goto(f"{app}/review")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], f"the queue is {width} px wide at {PHONE['width']} px"


def test_admin_pages_redirect_to_login_and_back_then_confirm_the_new_site(new_page: NewPage, app: str) -> None:
    page = new_page("admin", permissions=["clipboard-read", "clipboard-write"])
    page.goto(f"{app}/admin/sites")
    expect(page).to_have_url(f"{app}/login?next=%2Fadmin%2Fsites")
    expect(page.locator("h1")).to_have_text("Log in")
    save_screenshot(page, "after-admin-sites-no-session")
    page.get_by_label("Name").fill(ADMIN)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(f"{app}/admin/sites")

    page.locator("#name-new").fill("Riverside forum")
    page.locator("#origins-new").fill("https://riverside.example")
    page.get_by_role("button", name="Add the site").click()
    expect(page).to_have_url(re.compile(re.escape(f"{app}/admin/sites?added=") + r"s_[\w-]+#site-s_[\w-]+"))
    flash = page.get_by_role("status").filter(has_text="Added the site")
    expect(flash).to_contain_text("Added the site “Riverside forum”")
    key = page.url.split("added=", 1)[1].split("#", 1)[0]
    snippet = f'<script src="{app}/widget.js" data-site="{key}" async></script>'
    code = flash.locator("pre code")
    expect(code).to_have_text(snippet)
    box = code.bounding_box()
    assert box is not None and box["y"] < 600, "the snippet is near the top of the page"
    flash.get_by_role("button", name="Copy the snippet").click()
    expect(flash.locator(".copied")).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == snippet
    save_screenshot(page, "after-admin-sites-added")
