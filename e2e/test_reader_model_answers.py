"""What readers see of a model's answers (issue 16): a parser's complaint about an unreadable answer never reaches
them (the API and the review pages keep it), and a model's confidence is given in words with the number on demand.

The "model" is a SCRIPTED stand-in for an OpenAI-compatible server, NOT a model: a few lines of HTTP that answer
every request the same way, so that the app's real openai backend, parser and pages are what is tested. One
script answers without any of the expected tags (as small local models often do); the other answers in the
expected form, using the answers of tests/support/scripted_backend.py.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from e2e.conftest import StartServer, StaticOrigin, save_screenshot
from e2e.support.demo import EN_TERM, EN_TEXT, analyse, wait_until_done
from e2e.support.widget import TOKEN, embed, one_post_page, register_site
from engine.llm.backend import Message
from tests.support.scripted_backend import default_answer
from tests.support.scripted_server import ScriptedModelServer

UNREADABLE = "I think this text is probably fine, but it depends on who reads it."
PARSER_DETAIL = "expected tags"
READER_SENTENCE = "The automatic check could not decide; a moderator will look."
REVIEW_POST = "opening-announcement"  # no term; the check without the vocabulary got no readable answer
WIDGET_TIMEOUT_MS = 60_000
SLOW_ANSWER_S = 6.0  # longer than the widget's check waits, so panels open on a running analysis

_direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def app_with(start_server: StartServer, answer: Callable[[list[Message]], str | None], name: str) -> Iterator[str]:
    model = ScriptedModelServer(answer)
    try:
        yield start_server(
            {
                "UNERASE_LLM_BACKEND": "openai",
                "UNERASE_LLM_MODEL": name,
                "UNERASE_LLM_BASE_URL": model.url,
                "UNERASE_MODE": "thorough",
                "UNERASE_LLM_TIMEOUT": "20",
                "UNERASE_ADMIN_TOKEN": TOKEN,
            }
        )
    finally:
        model.close()


@pytest.fixture(scope="module")
def unreadable_app(start_server: StartServer) -> Iterator[str]:
    yield from app_with(start_server, lambda _messages: UNREADABLE, "scripted-unreadable")


@pytest.fixture(scope="module")
def failing_app(start_server: StartServer) -> Iterator[str]:
    yield from app_with(start_server, lambda _messages: None, "scripted-failing")


def slowly(messages: list[Message]) -> str:
    time.sleep(SLOW_ANSWER_S)
    return default_answer(messages)


@pytest.fixture(scope="module")
def slow_app(start_server: StartServer) -> Iterator[str]:
    yield from app_with(start_server, slowly, "scripted-slow")


@pytest.fixture(scope="module")
def readable_app(start_server: StartServer) -> Iterator[str]:
    yield from app_with(start_server, default_answer, "scripted-tags")


def test_readers_get_a_plain_sentence_where_the_api_keeps_the_parser_detail(page: Page, unreadable_app: str) -> None:
    analysis_id = analyse(page, unreadable_app, EN_TEXT)
    wait_until_done(page)
    section = page.locator("#result-section")
    expect(page.locator("#decision .decision")).to_contain_text("needs review by a person")
    expect(section).not_to_contain_text(PARSER_DETAIL)
    expect(section).not_to_contain_text("<reasoning>")
    # the term's popover and the check without the vocabulary say it in words
    expect(page.locator("#targeting")).to_contain_text(READER_SENTENCE)
    expect(page.locator("#hits .popover .verdict-detail").first).to_contain_text(READER_SENTENCE, use_inner_text=False)
    # an undecided check has no confidence worth stating
    expect(section.locator(".confidence")).to_have_count(0)
    save_screenshot(page, "after-demo-unreadable-model")
    page.reload()
    expect(page.locator("#result-section")).not_to_contain_text(PARSER_DETAIL)

    with _direct.open(f"{unreadable_app}/api/v1/analyses/{analysis_id}", timeout=30) as response:
        document = json.load(response)
    assert PARSER_DETAIL in document["hits"][0]["verdict"]["reason"], document["hits"][0]["verdict"]
    assert PARSER_DETAIL in document["targeting"]["reason"], document["targeting"]


def forum_showing_review(app: str, forum_origin: StaticOrigin) -> str:
    """The demo thread on a site of its own that shows "Under review" on undecided posts (the default shows nothing)."""
    with _direct.open(f"{app}/demo/forum", timeout=30) as response:
        thread = response.read().decode("utf-8")
    key = register_site(app, [forum_origin.origin], show_undecided="review")
    return forum_origin.publish(f"/review-{key}.html", embed(thread, app, key))


def test_the_widget_panel_shows_no_parser_detail(page: Page, unreadable_app: str, forum_origin: StaticOrigin) -> None:
    page.goto(forum_showing_review(unreadable_app, forum_origin))
    widget = page.locator(f'[data-unerase-id="{REVIEW_POST}"] + [data-unerase-widget]')
    # undecided by the model: the post goes to a moderator, and its button says so
    widget.get_by_role("button", name="Under review").click(timeout=WIDGET_TIMEOUT_MS)
    panel = widget.locator('[role="dialog"]')
    expect(panel).to_contain_text("Decision: needs review")
    expect(panel).not_to_contain_text(PARSER_DETAIL)
    expect(panel).not_to_contain_text("<reasoning>")
    save_screenshot(page, "after-widget-unreadable-model")


def test_a_failing_model_server_is_one_plain_sentence_per_stage(
    page: Page, failing_app: str, forum_origin: StaticOrigin
) -> None:
    analysis_id = analyse(page, failing_app, EN_TEXT)
    wait_until_done(page)
    errors = page.locator("#errors li")
    expect(errors).to_have_count(2)  # the term's context and the check without the vocabulary
    for index in range(2):
        expect(errors.nth(index)).to_contain_text(READER_SENTENCE)
    expect(page.locator("#result-section")).not_to_contain_text("scripted failure")
    expect(page.locator("#result-section")).not_to_contain_text("InternalServerError")
    with _direct.open(f"{failing_app}/api/v1/analyses/{analysis_id}", timeout=30) as response:
        document = json.load(response)
    assert document["errors"] and all("InternalServerError" in e["message"] for e in document["errors"]), document

    page.goto(forum_showing_review(failing_app, forum_origin))
    widget = page.locator(f'[data-unerase-id="{REVIEW_POST}"] + [data-unerase-widget]')
    widget.get_by_role("button", name="Under review").click(timeout=WIDGET_TIMEOUT_MS)
    panel = widget.locator('[role="dialog"]')
    expect(panel).to_contain_text("Decision: needs review")
    expect(panel).not_to_contain_text("InternalServerError")
    expect(panel).not_to_contain_text("model server")
    save_screenshot(page, "after-widget-failing-model")


def test_a_models_confidence_is_shown_in_words_with_the_number_on_demand(page: Page, readable_app: str) -> None:
    analyse(page, readable_app, EN_TEXT)
    wait_until_done(page)
    detail = page.locator("#hits .popover .verdict-detail").first
    expect(detail).to_contain_text("used in its offensive sense", use_inner_text=False)
    confidence = detail.locator(".confidence")
    expect(confidence).to_have_count(1)
    # the scripted answers carry no log-probabilities, so the engine's default 0.7 applies
    expect(confidence).to_have_attribute("title", "confidence 70 %")
    assert confidence.evaluate("c => c.firstChild.textContent") == "not very sure"
    expect(page.locator("#hits button.hit", has_text=EN_TERM)).to_be_visible()
    save_screenshot(page, "after-demo-model-confidence")


def test_the_widget_panel_gives_a_models_confidence_in_words(
    page: Page, readable_app: str, forum_origin: StaticOrigin
) -> None:
    key = register_site(readable_app, [forum_origin.origin], mode="thorough")
    post = "minister-quote"
    page.goto(forum_origin.publish(f"/confidence-{key}.html", one_post_page(readable_app, key, post, EN_TEXT)))
    widget = page.locator(f'[data-unerase-id="{post}"] + [data-unerase-widget]')
    widget.get_by_role("button", name="Why flagged?").click(timeout=WIDGET_TIMEOUT_MS)
    panel = widget.locator('[role="dialog"]')
    expect(panel).to_contain_text("Decision: flagged", timeout=WIDGET_TIMEOUT_MS)
    # the term was judged by the model (thorough mode): its default 0.7, in the demo page's words
    details = panel.locator("details").first
    details.locator("summary").click()
    term = details.locator(".c")
    expect(term).to_have_count(1)
    expect(details).to_contain_text("Confidence: not very sure")
    expect(term).to_have_attribute("title", "Confidence 70 %")
    expect(term.locator(".sr")).to_have_text(" (Confidence 70 %)")  # read out after the words
    # the decision states one too, since a model took part; its number stays on demand
    decision = panel.locator("p:has(> b)", has_text="Decision: flagged")
    expect(decision.locator(".c")).to_have_count(1)
    expect(decision.locator(".c")).to_have_attribute("title", re.compile(r"^Confidence \d{1,3} %$"))
    save_screenshot(page, "after-widget-model-confidence")


def test_while_a_slow_model_answers_the_page_says_what_is_left(page: Page, slow_app: str) -> None:
    analyse(page, slow_app, EN_TEXT)
    # the terms are there at once; the model's context check of the term is what is pending
    expect(page.locator("#hits button.hit", has_text=EN_TERM)).to_be_visible()
    expect(page.locator("#stage-terms")).to_have_text("Vocabulary terms: done (1 term found)")
    expect(page.locator("#stage-context")).to_have_text("Context of each term: in progress (0 of 1 checked)")
    expect(page.locator("#stage-decision")).to_have_text("Decision: pending")
    expect(page.locator("#elapsed")).to_have_text(re.compile(r"^Running for [1-9]\d* s · [1-4] of 5 steps left$"))
    expect(page.locator("#announce")).to_have_text("1 term found.")
    save_screenshot(page, "after-demo-waiting-for-a-model")
    wait_until_done(page, timeout=60_000)
    expect(page.locator("#stages li.stage.done")).to_have_count(5)
    expect(page.locator("#elapsed")).to_be_hidden()
    expect(page.locator("#announce")).to_have_text("Analysis finished.")


def test_a_widget_panel_following_a_slow_model_announces_the_decision(
    page: Page, slow_app: str, forum_origin: StaticOrigin
) -> None:
    key = register_site(slow_app, [forum_origin.origin], mode="thorough")
    post = "potholes-grumble"
    text = "Let me guess who will be queuing for the free lunches: the same benefit scroungers as always."
    page.goto(forum_origin.publish(f"/slow-{key}.html", one_post_page(slow_app, key, post, text)))
    widget = page.locator(f'[data-unerase-id="{post}"] + [data-unerase-widget]')
    # the unambiguous term flags the post at once; the model's checks are still running when the panel opens
    widget.get_by_role("button", name="Why flagged?").click(timeout=WIDGET_TIMEOUT_MS)
    panel = widget.locator('[role="dialog"]')
    live = panel.locator('p[aria-live="polite"]')
    expect(live).to_have_count(1)
    expect(panel.locator("h3 + p")).to_have_text("Loading…")
    expect(live).to_have_text("")
    expect(live).to_have_text("Decision: flagged", timeout=60_000)
    expect(panel.locator("h3 + p")).not_to_have_text("Loading…")
    expect(panel).not_to_contain_text("Sorry")
    save_screenshot(page, "after-widget-slow-model-decided")
