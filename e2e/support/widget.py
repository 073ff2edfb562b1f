"""The widget on a forum page in a real browser: a site registered through the admin API, the demo forum embedded
on another origin, and the waits and locators the widget's browser tests share."""

from __future__ import annotations

import html
import json
import urllib.request
from dataclasses import dataclass
from typing import Any

from playwright.sync_api import Locator, Page, expect

TOKEN = "e2e-widget-admin-token"
# A first check on a cold server may answer "running"; the widget asks again after 2, 4, 8 and 16 s.
SETTLED_TIMEOUT_MS = 60_000
PANEL_TIMEOUT_MS = 10_000

# A proxy configured on the machine must not come between the tests and servers on the loopback address.
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def call(url: str, body: object | None = None, token: str | None = None, origin: str | None = None) -> Any:
    """JSON from a GET (or a POST when `body` is given), as a server or a moderator's script would call;
    `origin`: the Origin header a page of that origin would send (the widget's checks need one)."""
    headers = {"Accept": "application/json"}
    if origin is not None:
        headers["Origin"] = origin
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    with direct.open(urllib.request.Request(url, data=data, headers=headers), timeout=30) as response:
        return json.load(response)


def register_site(app: str, origins: list[str], **fields: object) -> str:
    """A new site key through the admin API; the rate limit is raised so retries and reloads never hit it."""
    body = {"name": "e2e forum", "allowed_origins": origins, "rate_limit_per_minute": 10_000, **fields}
    key: str = call(f"{app}/api/v1/sites", body, token=TOKEN)["key"]
    return key


def embed(forum_html: str, app: str, key: str) -> str:
    """The app's demo forum page as another site embeds it: absolute URLs to the app, and its own site key."""
    replacements = [
        ('src="/widget.js"', f'src="{app}/widget.js"'),
        ('data-site="demo"', f'data-site="{key}"'),
    ]
    for old, new in replacements:
        # the page is built by string replacement, so a changed template must fail here rather than test nothing
        assert forum_html.count(old) == 1, f"the demo forum page no longer has exactly one {old}"
        forum_html = forum_html.replace(old, new)
    return forum_html.replace('href="/static/', f'href="{app}/static/')


@dataclass(frozen=True)
class Forum:
    app: str
    key: str
    url: str


def widget_of(page: Page, post_id: str) -> Locator:
    """The widget's host element, which it inserts right after the post it belongs to."""
    return page.locator(f'[data-unerase-id="{post_id}"] + [data-unerase-widget]')


def panel_of(page: Page, post_id: str) -> Locator:
    return widget_of(page, post_id).locator('[role="dialog"]')


# True once every answer is a finished one the widget has kept for the session (the widget places its buttons
# right after it keeps them, before the page gets to poll again). A post left for review gets no widget at all
# on a site that shows readers nothing for it, so the widgets are not counted.
SETTLED = """([site, posts]) => {
  const kept = Object.keys(sessionStorage).filter((k) => k.startsWith(`unerase:${site}:u`)).length;
  return kept === posts;
}"""

LABELS = """() => Object.fromEntries(Array.from(document.querySelectorAll("[data-unerase-widget]"),
  (host) => [host.previousElementSibling.getAttribute("data-unerase-id"), host.getAttribute("data-unerase-widget")]))"""


def wait_until_settled(page: Page, key: str, posts: int) -> None:
    page.wait_for_function(SETTLED, arg=[key, posts], timeout=SETTLED_TIMEOUT_MS)


def labels_on(page: Page) -> dict[str, str]:
    labels: dict[str, str] = page.evaluate(LABELS)
    return labels


def open_by_mouse(page: Page, post_id: str, button: str = "Why flagged?") -> Locator:
    widget_of(page, post_id).get_by_role("button", name=button).click()
    panel = panel_of(page, post_id)
    expect(panel).to_be_visible(timeout=PANEL_TIMEOUT_MS)
    return panel


def one_post_page(app: str, key: str, post_id: str, text: str) -> str:
    """A forum page with a single post, so the slow model has only that one to read."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>One post</title></head><body>\n'
        f'<article lang="en"><div class="post-body" data-unerase data-unerase-id="{post_id}">{html.escape(text)}'
        f'</div></article>\n<script src="{app}/widget.js" data-site="{key}" async></script>\n</body></html>\n'
    )
