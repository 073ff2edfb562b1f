"""The demo page in a real browser: streaming order, keyboard use, permalinks, hostile input, no JavaScript.

The texts use terms of the shipped vocabularies that are not marked ambiguous, so a server without a language
model flags them by the vocabulary alone. With the real model (`model_server`) only structure and order are
checked: SmolLM2-135M is far too small for its verdicts to mean anything.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import NewPage, save_screenshot
from e2e.support.demo import (
    EN_TERM,
    EN_TEXT,
    FINISHED,
    PERMALINK,
    RESULT_TIMEOUT_MS,
    TWO_TERMS,
    analyse,
    wait_until_done,
)
from web.examples import load_examples

EL_TERM = "λαθρομετανάστες"
EL_TEXT = f"Η πλατεία της γειτονιάς μας έχει γεμίσει {EL_TERM} και κανείς από τον δήμο δεν κάνει τίποτα γι' αυτό."
TWO_TERMS_TEXT = f"They have {TWO_TERMS[0]} to stay, and every mother on benefits is a {TWO_TERMS[1]}."

# Without a model the confidence is a fixed number per rule, so the decision states no confidence at all.
SEVERITY_WITHOUT_CONFIDENCE = re.compile(r"Severity: (none|slight|moderate|high) · targets: [^%]*$")
# Thorough mode with SmolLM2 on two threads: three model calls, each allowed conftest.MODEL_TIMEOUT seconds.
REAL_MODEL_TIMEOUT_MS = 180_000

# Installed before any page script runs: notes when a marked hit and when the decision first exist in the
# document. Each mutation batch is numbered too, so a failure can say whether both came in the same swap.
ORDER_PROBE = """
(() => {
  const seen = (window.__order = { hit: null, decision: null, hitBatch: null, decisionBatch: null });
  let batch = 0;
  new MutationObserver(() => {
    batch += 1;
    const now = performance.now();
    if (seen.hit === null && document.querySelector("#hits button.hit")) {
      seen.hit = now;
      seen.hitBatch = batch;
    }
    if (seen.decision === null && document.querySelector("#decision .decision")) {
      seen.decision = now;
      seen.decisionBatch = batch;
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""


def observed_order(page: Page) -> dict[str, Any]:
    order: dict[str, Any] = page.evaluate("window.__order")
    assert order["hit"] is not None, f"no button.hit was ever added to #hits: {order}"
    assert order["decision"] is not None, f"no .decision was ever added to #decision: {order}"
    return order


def check_hits_markup(page: Page, terms: tuple[str, ...]) -> None:
    """Each hit: a button in the text, a badge in the list of terms, and a popover the button opens."""
    buttons = page.locator("#hits p.text button.hit")
    expect(buttons).to_have_text(list(terms))
    expect(page.locator("#hits ul.terms span.badge.verdict")).to_have_count(len(terms))
    expect(page.locator("#hits div.popover[popover]")).to_have_count(len(terms))
    for index in range(len(terms)):
        target = buttons.nth(index).get_attribute("popovertarget")
        assert target, f"hit {index} has no popovertarget"
        expect(page.locator(f"#hits div.popover[popover]#{target}")).to_have_count(1)


@pytest.mark.parametrize(
    ("lang", "text", "term", "detected"),
    [
        pytest.param("", EN_TEXT, EN_TERM, "en", id="en-detected"),
        pytest.param("el", EL_TEXT, EL_TERM, "el", id="el-chosen"),
    ],
)
def test_hits_are_marked_before_the_decision_arrives(
    page: Page, server: str, lang: str, text: str, term: str, detected: str
) -> None:
    page.add_init_script(ORDER_PROBE)
    analyse(page, server, text, lang)

    hit = page.locator("#hits button.hit", has_text=term)
    expect(hit).to_be_visible(timeout=RESULT_TIMEOUT_MS)
    expect(page.locator("#decision .decision")).to_be_visible(timeout=RESULT_TIMEOUT_MS)
    wait_until_done(page)
    expect(page.locator("#meta")).to_contain_text(f"Language: {detected}")
    check_hits_markup(page, (term,))

    order = observed_order(page)
    assert order["hit"] < order["decision"], f"the decision was not shown after the hits: {order}"
    save_screenshot(page, f"demo-streamed-{detected}")


@pytest.mark.llm
@pytest.mark.slow
def test_with_a_real_model_the_hits_show_while_the_decision_is_pending(page: Page, model_server: str) -> None:
    page.add_init_script(ORDER_PROBE)
    analyse(page, model_server, EN_TEXT)

    hit = page.locator("#hits button.hit", has_text=EN_TERM)
    expect(hit).to_be_visible(timeout=RESULT_TIMEOUT_MS)
    # Thorough mode sends even this unambiguous term to the model, which has not answered yet.
    expect(page.locator("#decision .decision")).to_have_count(0, timeout=1_000)
    expect(page.locator("#hits ul.terms span.badge.verdict.pending")).to_have_count(1, timeout=1_000)
    expect(page.locator("#meta")).to_contain_text("SmolLM2-135M-Instruct")
    save_screenshot(page, "demo-real-model-hits-before-decision")

    expect(page.locator("#decision .decision")).to_be_visible(timeout=REAL_MODEL_TIMEOUT_MS)
    wait_until_done(page)
    # The model's verdict (whatever it is) replaced the pending badge.
    expect(page.locator("#hits ul.terms span.badge.verdict.pending")).to_have_count(0)
    expect(page.locator("#hits ul.terms span.badge.verdict")).to_have_count(1)

    order = observed_order(page)
    gap = order["decision"] - order["hit"]
    # Even a fast machine needs far longer than this for one completion; vocabulary-only takes milliseconds.
    assert gap > 200, f"the hits came only {gap:.0f} ms before the decision: {order}"
    save_screenshot(page, "demo-real-model-decided")


def test_a_hit_is_opened_and_closed_from_the_keyboard(page: Page, server: str) -> None:
    analyse(page, server, EN_TEXT)
    wait_until_done(page)
    hit = page.locator("#hits p.text button.hit", has_text=EN_TERM)

    # Tab from the last link before the text (the statement link of the permalink line) reaches the hit.
    page.locator("#result-section p.permalink a", has_text="Statement of reasons").focus()
    page.keyboard.press("Tab")
    expect(hit).to_be_focused()

    target = hit.get_attribute("popovertarget")
    popover = page.locator(f"#{target}")
    expect(popover).to_be_hidden()
    page.keyboard.press("Enter")
    expect(page.locator(f"#{target}:popover-open")).to_have_count(1)
    expect(popover).to_be_visible()
    # The vocabulary's description of the term, as the API gives it for the same text.
    answer = page.request.post(f"{server}/api/v1/analyses", data={"text": EN_TEXT})
    assert answer.ok, f"POST /api/v1/analyses: HTTP {answer.status}"
    description = answer.json()["hits"][0]["description"]
    expect(popover).to_contain_text(description)
    expect(popover.locator(".categories")).to_contain_text("Targets:")
    save_screenshot(page, "demo-popover-open")

    page.keyboard.press("Escape")
    expect(page.locator(f"#{target}:popover-open")).to_have_count(0)
    expect(popover).to_be_hidden()
    expect(hit).to_be_focused()


def test_the_decision_is_complete_and_the_permalink_shows_it_without_streaming(page: Page, server: str) -> None:
    analyse(page, server, EN_TEXT)
    decision = page.locator("#decision .decision")
    expect(decision).to_be_visible(timeout=RESULT_TIMEOUT_MS)
    expect(decision).to_contain_text(SEVERITY_WITHOUT_CONFIDENCE)
    wait_until_done(page)
    streamed = {part: page.locator(part).inner_text() for part in ("#hits", "#explanation", "#decision")}
    permalink = page.url

    streams: list[str] = []
    page.on("request", lambda request: streams.append(request.url) if "/stream" in request.url else None)
    page.reload(wait_until="networkidle")

    assert page.url == permalink
    expect(page.locator("#result-section")).to_be_visible()
    expect(page.locator("#result-section[sse-connect], [sse-swap]")).to_have_count(0)
    assert streams == [], f"the stored result was streamed again: {streams}"
    check_hits_markup(page, (EN_TERM,))
    expect(page.locator("#decision .decision")).to_contain_text(SEVERITY_WITHOUT_CONFIDENCE)
    expect(page.locator("#done")).to_have_text(FINISHED)
    for part, text in streamed.items():
        expect(page.locator(part)).to_have_text(text, use_inner_text=True)


SCRIPT_TAG = "<script>alert(1)</script>"
IMG_TAG = "<img src=x onerror=alert(2)>"
HOSTILE_TEXT = f"{SCRIPT_TAG} Look, another {EN_TERM}! {IMG_TAG} She never worked a day."


def check_inert(page: Page, dialogs: list[str], image_requests: list[str]) -> None:
    """The markup in the text stayed text: nothing was created from it, nothing ran, nothing was fetched."""
    expect(page.locator("#hits button.hit", has_text=EN_TERM)).to_be_visible()
    expect(page.locator("#hits script, #hits img")).to_have_count(0)
    expect(page.locator("#result-section script, #result-section img")).to_have_count(0)
    text = page.locator("#hits p.text")
    expect(text).to_contain_text(SCRIPT_TAG)
    expect(text).to_contain_text(IMG_TAG)
    scripts = page.evaluate("Array.from(document.scripts, s => s.textContent).filter(t => t.includes('alert'))")
    assert scripts == [], f"a script element with the text's code exists: {scripts}"
    assert dialogs == [], f"the text's code ran and opened dialogs: {dialogs}"
    assert image_requests == [], f"an <img> from the text was loaded: {image_requests}"


def test_markup_in_the_text_is_shown_as_text_and_never_runs(page: Page, server: str) -> None:
    dialogs: list[str] = []
    image_requests: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(f"{dialog.type}: {dialog.message}")
        dialog.dismiss()

    page.on("dialog", on_dialog)
    page.on("request", lambda request: image_requests.append(request.url) if request.url.endswith("/x") else None)
    analyse(page, server, HOSTILE_TEXT, "en")
    wait_until_done(page)
    expect(page.locator("#decision .decision")).to_be_visible()
    check_inert(page, dialogs, image_requests)

    # The stored result is rendered by the server rather than streamed: the same must hold there.
    page.reload(wait_until="networkidle")
    wait_until_done(page)
    check_inert(page, dialogs, image_requests)


def test_without_javascript_the_form_leads_to_the_whole_result(new_page: NewPage, server: str) -> None:
    page = new_page("no-js", java_script_enabled=False)
    page.goto(server + "/")
    form = page.locator("form.analyse")
    form.locator("textarea#text").fill(EN_TEXT)
    form.locator("select#mode").select_option("fast")
    form.locator("button[type=submit]").click()

    # A plain form post: the server answers only when the analysis is finished, with a redirect to it.
    expect(page).to_have_url(PERMALINK, timeout=RESULT_TIMEOUT_MS)
    expect(page.locator("#result-section[sse-connect], [sse-swap]")).to_have_count(0)
    check_hits_markup(page, (EN_TERM,))
    expect(page.locator("#decision .decision")).to_contain_text(SEVERITY_WITHOUT_CONFIDENCE)
    expect(page.locator("#explanation")).to_contain_text(EN_TERM)
    expect(page.locator("#done")).to_have_text(FINISHED)


def test_accessibility_smoke_and_a_narrow_screen(page: Page, new_page: NewPage, server: str) -> None:
    analyse(page, server, TWO_TERMS_TEXT, "en")
    wait_until_done(page)
    hits = page.locator("#hits p.text button.hit")
    expect(hits).to_have_count(len(TWO_TERMS))
    for index, term in enumerate(TWO_TERMS):
        # the name is the term itself; the description is its verdict badge (aria-describedby)
        expect(hits.nth(index)).to_have_accessible_name(term)
        expect(hits.nth(index)).to_have_accessible_description(re.compile(r"\S"))
    # the page's live region is there before any result: it is not created by the swap that fills it
    expect(page.locator("#announce[role=status][aria-live=polite]")).to_have_count(1)
    expect(page.locator("#result-section [aria-live]")).to_have_count(0)

    narrow = new_page("375px", viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True)
    narrow.goto(page.url)
    expect(narrow.locator("#hits p.text button.hit")).to_have_count(len(TWO_TERMS))
    expect(narrow.locator("#decision .decision")).to_be_visible()
    save_screenshot(narrow, "demo-result-375px")
    width = narrow.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, f"the result is {width} px wide on a 375 px screen: it scrolls sideways"


def test_every_example_that_quotes_a_slur_to_criticise_it_is_explained_not_flagged(page: Page, server: str) -> None:
    """Use versus mention (docs/uses.md): the demo's own counter-speech examples, as a visitor picks them."""
    examples = [(n, e) for n, e in enumerate(load_examples()) if e.title == "Quoting a slur to criticise it"]
    assert len(examples) == 7
    for number, example in examples:
        page.goto(f"{server}/?example={number}")
        expect(page.locator("textarea#text")).to_have_value(example.text)
        page.locator("form.analyse button[type=submit]").click()
        expect(page).to_have_url(PERMALINK, timeout=RESULT_TIMEOUT_MS)
        wait_until_done(page)
        decision = page.locator("#decision .decision")
        expect(decision.locator("h3")).to_have_text("Decision: not flagged")
        expect(decision.locator("ul.reasons")).to_contain_text("explained, not held against the author")
        expect(page.locator("#hits ul.terms span.badge.verdict").first).to_contain_text("not an attack")
        # the reader still learns what the word means: the explanation is there, opened by the use note
        expect(page.locator("#explanation")).not_to_be_empty()
        if example.lang == "en":
            save_screenshot(page, "demo-quoting-a-slur")
