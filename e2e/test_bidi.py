"""Right-to-left overrides in curators' strings stay inside them, in the demo page and in the widget's panel.

A vocabulary whose description, suggestion, alternatives and sources carry U+202E (RIGHT-TO-LEFT OVERRIDE) is
loaded by a server of its own. Unisolated, the override reverses every character after it up to the end of the
line: "Alternatives: ‮first choice, second choice" shows ", second choice" backwards. Each such string must sit
in its own bidi isolate (`<bdi>`, or a block of its own), and the words after it must keep their order on screen.
"""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import Locator, Page, expect

from e2e.conftest import StartServer, StaticOrigin, save_screenshot
from e2e.support.widget import SETTLED_TIMEOUT_MS, TOKEN, register_site

RLO = "\u202e"
TERM = "grobblewort"  # invented, so that no shipped vocabulary knows it
# the user's own override; an attack, since a reported word ("they called him a ...") is only explained
TEXT = f"Our new neighbour is a {TERM} {RLO}and everyone knows it."
VOCABULARY = f"""# Written for this test: every string a curator writes, each with a right-to-left override in it.
format: unerase-vocabulary/1
language: en
issues:
  - id: en-grobblewort
    categories: [disability]
    description: "An invented insult for this test; {RLO}it is reversed only up to its own end."
    suggestion_note: "{RLO}Say what you mean."
    suggested_terms: ["{RLO}first choice", "second choice"]
    sources: ["{RLO}source one", "https://example.org/two"]
    terms: [{TERM}]
"""

# Text nodes with a U+202E under `root` that are not isolated: an isolate (computed unicode-bidi isolate or
# plaintext) or a block around the string must hold that string and nothing else, unless it is an element with
# a dir attribute, which the pages give to a post's whole text (cut into pieces around its marked terms).
UNISOLATED = """(root) => {
  const bad = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.data.includes("\\u202e")) continue;
    let el = node.parentElement;
    let isolated = false;
    while (el && el !== root.parentElement) {
      const style = getComputedStyle(el);
      if (/isolate|plaintext/.test(style.unicodeBidi) || !style.display.startsWith("inline")) {
        isolated = el.textContent === node.data || el.hasAttribute("dir");
        break;
      }
      el = el.parentElement;
    }
    if (!isolated) bad.push(node.data);
  }
  return bad;
}"""

# Where two words of one text node are drawn: [left of the first, left of the second].
LEFTS = """(root, [phrase, first, second]) => {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const at = node.data.indexOf(phrase);
    if (at < 0) continue;
    const left = (word) => {
      const range = document.createRange();
      const start = node.data.indexOf(word, at);
      range.setStart(node, start);
      range.setEnd(node, start + word.length);
      return range.getBoundingClientRect().left;
    };
    return [left(first), left(second)];
  }
  return null;
}"""


@pytest.fixture(scope="module")
def app(start_server: StartServer, tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("bidi-vocabulary")
    (folder / "en").mkdir()
    (folder / "en" / "grobblewort.yaml").write_text(VOCABULARY, encoding="utf-8")
    return start_server({"UNERASE_VOCABULARIES": json.dumps([str(folder)]), "UNERASE_ADMIN_TOKEN": TOKEN})


def assert_isolated(root: Locator, alternatives: Locator) -> None:
    """No U+202E under `root` is left unisolated, and the alternative after the one with an override is drawn
    left to right (`alternatives`: the line that lists them)."""
    assert root.evaluate(UNISOLATED) == [], "strings with a U+202E that can reorder the text around them"
    lefts = alternatives.evaluate(LEFTS, ["second choice", "second", "choice"])
    assert lefts is not None, "the second alternative is not shown"
    assert lefts[0] < lefts[1], f"'second choice' is drawn backwards after the override (lefts {lefts})"


def test_the_demo_page_keeps_overrides_in_the_curators_strings(page: Page, app: str) -> None:
    page.goto(app + "/")
    page.locator("textarea#text").fill(TEXT)
    page.locator("select#lang").select_option("en")
    page.get_by_role("button", name="Analyse").click()
    result = page.locator("#result")
    expect(result.locator("#done")).to_contain_text("Finished in", timeout=20_000)
    result.locator("button.term-button").first.click()
    popover = result.locator(".popover").first
    expect(popover).to_be_visible()
    expect(popover).to_contain_text("second choice")
    # the alternatives' line reads "Instead:", or "Also possible:" after a suggestion note (issue 16)
    alternatives = popover.locator("p", has_text=re.compile(r"^(Instead|Also possible):"))
    assert_isolated(popover, alternatives)
    assert_isolated(result, alternatives)
    save_screenshot(page, "bidi-demo-popover")


def test_the_widget_panel_keeps_overrides_in_the_curators_strings(
    page: Page, app: str, forum_origin: StaticOrigin
) -> None:
    key = register_site(app, [forum_origin.origin])
    forum = f"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>A thread</title></head><body>
<article><p data-unerase data-unerase-id="post-1">{TEXT}</p></article>
<script src="{app}/widget.js" data-site="{key}" async></script></body></html>"""
    page.goto(forum_origin.publish(f"/bidi-{key}.html", forum))
    host = page.locator('[data-unerase-id="post-1"] + [data-unerase-widget]')
    host.get_by_role("button", name="Why flagged?").click(timeout=SETTLED_TIMEOUT_MS)
    panel = host.locator('[role="dialog"]')
    expect(panel).to_be_visible()
    panel.locator("summary").first.click()  # the hit's details: description, alternatives, sources
    expect(panel).to_contain_text("second choice")
    assert_isolated(panel, panel.locator("p", has_text="Alternatives:"))
    save_screenshot(page, "bidi-widget-panel")
