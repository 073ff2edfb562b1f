"""The moderators' review queue in a real browser, fed by the real widget on a forum of another origin (issue 7).

A reader's visit to the demo forum leaves the posts the vocabularies cannot settle alone (ambiguous terms and no
language model) in the queue as needs_review; a moderator logs in through /login, works three of them with the
keyboard only, and a reader who comes later, in a browser session of their own, sees the moderator's labels in
the widget. A reader's "This is wrong" from a widget panel reaches the queue with its comment.

The moderator's account is made before the server starts, in the database the server is then pointed at. Spot
checks are switched off so that the queue holds exactly what the test put there; each test has a site of its
own and looks at the queue of that site only.
"""

from __future__ import annotations

import html
import re
import urllib.request

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import NewPage, StartServer, StaticOrigin, save_screenshot
from e2e.support.widget import (
    PANEL_TIMEOUT_MS,
    TOKEN,
    Forum,
    embed,
    labels_on,
    open_by_mouse,
    panel_of,
    register_site,
    wait_until_settled,
    widget_of,
)
from web.auth import Accounts
from web.db import make_engine
from web.forum import load_thread
from web.i18n import lookup

MODERATOR = "e2e-moderator"
PASSWORD = "a passphrase long enough"
FLAGGED_POST = "potholes-grumble"
# The demo thread leaves fewer than three posts for review; these two, written for this test, add an ambiguous
# German word ("Kartoffel", a slur for Germans and the everyday word for potato) used in its everyday sense.
EXTRA_POSTS = {
    "soup-potatoes": "Ich bringe noch einen Sack Kartoffeln für die Suppe am Samstag mit.",
    "garden-potatoes": "Meine Tochter bringt Kartoffeln aus dem eigenen Garten mit, frisch geerntet.",
}
EXPLANATION = "A moderator read this post in its thread and decided that it should be flagged."
COMMENT = "The post complains about the council's budget; it names no group of people."

# A proxy configured on the machine must not come between the tests and the servers on the loopback address.
_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def with_extra_posts(forum_html: str) -> str:
    """The thread with EXTRA_POSTS appended, marked up as the demo forum marks up its own posts."""
    articles = "".join(
        f'<article class="post" id="post-{post_id}" lang="de"><header><span class="author">helga_r</span></header>'
        f'<div class="post-body" data-unerase data-unerase-id="{post_id}">{html.escape(text)}</div></article>\n'
        for post_id, text in EXTRA_POSTS.items()
    )
    assert forum_html.count("</main>") == 1, "the demo forum page no longer has exactly one </main>"
    return forum_html.replace("</main>", articles + "</main>")


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.fixture(scope="module")
def app(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    database = tmp_path_factory.mktemp("e2e-review") / "unerase.db"
    url = f"sqlite:///{database}"
    engine = make_engine(url)
    try:
        Accounts(engine).create(MODERATOR, PASSWORD, "moderator")
    finally:
        engine.dispose()
    # the example source (docs/examples.md) clears the everyday uses this thread holds ("Kartoffeln" for potatoes),
    # which would leave the queue nearly empty: this test is about working the queue, so it runs without it
    return start_server(
        {"UNERASE_ADMIN_TOKEN": TOKEN, "UNERASE_DATABASE_URL": url, "UNERASE_EXAMPLES_ENABLED": "false"}
    )


@pytest.fixture(scope="module")
def texts() -> dict[str, str]:
    """Post id -> text as the widget sends it (a quoted post first), for every post on the test's forum page."""
    thread = load_thread()
    return {post.id: thread.widget_text(post, lookup("forum.wrote", "en")) for post in thread.posts} | EXTRA_POSTS


@pytest.fixture
def forum(app: str, forum_origin: StaticOrigin) -> Forum:
    with _direct.open(f"{app}/demo/forum", timeout=30) as response:
        page = with_extra_posts(response.read().decode("utf-8"))
    # "Under review" shown to readers, so the test sees which posts wait (the default shows readers nothing)
    key = register_site(app, [forum_origin.origin], show_checked=True, show_undecided="review")
    return Forum(app, key, forum_origin.publish(f"/forum-{key}.html", embed(page, app, key)))


def log_in(page: Page, app: str, path: str) -> None:
    """Opens `path`, is sent to the login form, logs in as the moderator and lands back on `path`."""
    page.goto(app + path)
    expect(page).to_have_url(re.compile(re.escape(f"{app}/login?next=")))
    header = page.locator("header.site")
    expect(header.get_by_role("link", name="Log in")).to_be_visible()
    page.get_by_label("Name").fill(MODERATOR)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).to_have_url(app + path)
    # the nav now names the moderator and offers to log out
    expect(header.get_by_role("link", name=MODERATOR)).to_be_visible()
    expect(header.get_by_role("button", name="Log out")).to_be_visible()
    expect(header.get_by_role("link", name="Log in")).to_have_count(0)


def queued_posts(page: Page, texts: dict[str, str]) -> list[str]:
    """The posts the queue page lists, in its order, recognised by their excerpts."""
    page.wait_for_load_state()
    excerpts = page.locator("table.review-queue tbody a").all_inner_texts()
    found = []
    for excerpt in excerpts:
        start = words(excerpt).removesuffix("…")
        matches = [post_id for post_id, text in texts.items() if words(text).startswith(start)]
        assert len(matches) == 1, f"the queue's excerpt {excerpt!r} matches the posts {matches}"
        found.append(matches[0])
    return found


def post_on(page: Page, texts: dict[str, str]) -> str:
    """The post a review item page shows."""
    page.wait_for_load_state()  # the keyboard shortcuts are in a deferred script
    # the text under review, not the similar past decisions the page also quotes
    shown = words(page.locator("main p.text").first.text_content() or "")
    matches = [post_id for post_id, text in texts.items() if words(text) == shown]
    assert len(matches) == 1, f"the item page {page.url} shows the posts {matches}"
    return matches[0]


def press(page: Page, key: str, then: str) -> None:
    """A shortcut key, and the page it must lead to (after a decision, with `done=` naming what was saved)."""
    page.keyboard.press(key)
    expect(page).to_have_url(re.compile(re.escape(then) + r"(&done=[0-9a-f]+)?$"))


def test_a_moderator_works_three_items_by_keyboard_and_the_widget_follows(
    page: Page, new_page: NewPage, forum: Forum, texts: dict[str, str]
) -> None:
    # A reader's visit makes the analyses; those the vocabularies could not settle wait for a moderator.
    reader = new_page("reader-before")
    reader.goto(forum.url)
    wait_until_settled(reader, forum.key, len(texts))
    before = labels_on(reader)
    waiting = {post_id for post_id, label in before.items() if label == "needs_review"}
    assert len(waiting) >= 3, f"fewer than three posts were left for review: {before}"

    queue = f"/review?site={forum.key}"
    log_in(page, forum.app, queue)
    assert sorted(queued_posts(page, texts)) == sorted(waiting)
    save_screenshot(page, "review-queue")

    # Open the first item from the keyboard: the link has the focus, Enter follows it.
    page.locator("table.review-queue tbody a").first.focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(f"{forum.app}/review/") + r"[^/?]+\?site="))
    first_url, first = page.url, post_on(page, texts)
    second_url = forum.app + (page.locator("#review-next").get_attribute("href") or "")

    # j and k only move through the queue
    press(page, "j", second_url)
    second = post_on(page, texts)
    assert second != first
    press(page, "k", first_url)
    assert post_on(page, texts) == first

    decided: dict[str, str] = {}
    # 1: not flagged; the moderator lands on the next item in the queue
    press(page, "n", second_url)
    decided[first] = "not_flagged"

    # 2: an explanation written after "e" (its letters are text, not shortcuts), Escape, then "f" overturns the
    # deferral to flagged
    assert post_on(page, texts) == second
    third_url = forum.app + (page.locator("#review-next").get_attribute("href") or "")
    page.keyboard.press("e")
    box = page.locator("#explanation")
    expect(box).to_be_focused()
    page.keyboard.type(EXPLANATION)
    expect(box).to_have_value(EXPLANATION)
    page.keyboard.press("Escape")
    expect(box).not_to_be_focused()
    save_screenshot(page, "review-item-explained")
    press(page, "f", third_url)
    decided[second] = "flagged"

    # 3: not flagged again
    third = post_on(page, texts)
    assert third not in decided
    page.keyboard.press("n")
    expect(page).not_to_have_url(third_url)
    decided[third] = "not_flagged"

    page.goto(second_url)
    expect(page.locator("#review-state")).to_contain_text(f"Label: flagged, decided by moderator {MODERATOR}")
    page.goto(forum.app + queue)
    assert sorted(queued_posts(page, texts)) == sorted(waiting - decided.keys())
    save_screenshot(page, "review-queue-after")

    # A reader in a new browser session (nothing kept from before) sees the moderator's labels.
    later = new_page("reader-after")
    later.goto(forum.url)
    wait_until_settled(later, forum.key, len(texts))
    assert labels_on(later) == before | decided
    for post_id, label in decided.items():
        widget = widget_of(later, post_id)
        if label == "flagged":
            expect(widget.get_by_role("button", name="Why flagged?")).to_be_visible()
        else:
            expect(widget).to_have_text("✓ checked")
            expect(widget.get_by_role("button")).to_have_count(0)
    panel = open_by_mouse(later, second)
    # the explanation is the paragraph after its heading (the panel's live region announces the decision)
    expect(panel.locator("h3 + p")).to_have_text(EXPLANATION, timeout=PANEL_TIMEOUT_MS)
    expect(panel).to_contain_text("Decision: flagged")
    save_screenshot(later, "review-widget-follows")


def test_a_readers_this_is_wrong_reaches_the_queue(
    page: Page, new_page: NewPage, forum: Forum, texts: dict[str, str]
) -> None:
    reader = new_page("reader")
    reader.goto(forum.url)
    wait_until_settled(reader, forum.key, len(texts))
    panel = open_by_mouse(reader, FLAGGED_POST)
    panel.get_by_role("button", name="This is wrong").click()
    panel.get_by_role("textbox", name="What is wrong? (optional)").fill(COMMENT)
    panel.get_by_role("button", name="Send").click()
    expect(panel.get_by_role("status")).to_have_text("Thanks for your feedback.", timeout=PANEL_TIMEOUT_MS)
    expect(panel_of(reader, FLAGGED_POST)).to_be_visible()

    log_in(page, forum.app, f"/review?kind=disputed&site={forum.key}")
    assert queued_posts(page, texts) == [FLAGGED_POST]
    row = page.locator("table.review-queue tbody tr")
    expect(row).to_contain_text(f"disputed by a reader: {COMMENT}")
    save_screenshot(page, "review-disputed")

    row.get_by_role("link").click()
    assert post_on(page, texts) == FLAGGED_POST
    expect(page.locator("main")).to_contain_text(f"this is wrong — “{COMMENT}”")

    # Logging out from the nav ends the session: the queue asks for a login again.
    page.locator("header.site").get_by_role("button", name="Log out").click()
    expect(page).to_have_url(re.compile(re.escape(f"{forum.app}/login")))
    expect(page.locator("header.site").get_by_role("link", name="Log in")).to_be_visible()
    page.goto(f"{forum.app}/review?kind=disputed")
    expect(page).to_have_url(re.compile(re.escape(f"{forum.app}/login?next=")))
