"""The demo pages: the form, the streamed HTML fragments, the no-JavaScript result, permalinks, escaping."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from web.settings import Settings

from .webapp import client, sse_events

PAYLOAD = '<script>alert(1)</script> <img src=x onerror=alert(2)> a faggot "quoted" & more'


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with client(tmp_path_factory.mktemp("web")) as test_client:
        yield test_client


def test_demo_page_says_what_is_active(web: TestClient) -> None:
    response = web.get("/")
    assert response.status_code == 200
    assert response.template.name == "demo.html"  # type: ignore[attr-defined]
    page = response.text
    assert "Mode: vocabulary only (no LLM configured)" in page and "model: none" in page
    assert "entries in de, el, en, it, nl" in page
    assert "/static/vendor/htmx-2.0.11.min.js" in page and "/static/vendor/htmx-ext-sse-2.2.4.js" in page
    assert 'hx-post="/"' in page and 'method="post" action="/"' in page  # streams with JS, posts without
    csp = response.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "'unsafe-inline'" not in csp
    assert response.headers["x-content-type-options"] == "nosniff"


def test_examples_fill_the_form_without_javascript(web: TestClient) -> None:
    page = web.get("/").text
    assert '<a href="/?example=0" lang="en">' in page  # only languages the loaded vocabularies support
    filled = web.get("/?example=0")
    example = filled.context["text"]  # type: ignore[attr-defined]
    assert example and f">{example}</textarea>" in filled.text.replace("&#39;", "'")


def test_no_javascript_post_redirects_to_the_complete_permalink(web: TestClient) -> None:
    response = web.post("/", data={"text": "a half-caste child, a f@g", "lang": "en"}, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"].startswith("/analyses/")
    page = web.get(response.headers["location"])
    assert page.template.name == "analysis.html"  # type: ignore[attr-defined]
    html = page.text
    assert 'popovertarget="pop-h1" aria-describedby="badge-h1">half-caste</button>' in html
    assert '<div class="popover" id="pop-h1" popover role="dialog"' in html
    assert "A colonial-era label for people of mixed parentage" in html
    assert "disguised spelling" in html and "Decision: flagged" in html
    assert "sse-connect" not in html  # finished: nothing left to stream


def test_htmx_post_returns_the_streaming_shell_and_permalink(web: TestClient) -> None:
    response = web.post("/", data={"text": "a faggot", "lang": "en"}, headers={"HX-Request": "true"})
    assert response.status_code == 200
    assert response.template.name == "_analysis.html"  # type: ignore[attr-defined]
    permalink = response.headers["hx-push-url"]
    assert f'sse-connect="{permalink}/stream"' in response.text and 'sse-close="done"' in response.text
    for target in ("analysis", "hit", "verdict", "targeting", "explanation", "decision", "error", "done"):
        assert f'sse-swap="{target}"' in response.text
    # the live region lives in the page around the result, never in the swap that fills it (issue 16)
    assert "aria-live" not in response.text and 'id="announce"' not in response.text
    assert '<div id="announce" class="visually-hidden" role="status" aria-live="polite"></div>' in web.get("/").text
    # every stage is listed from the start, each saying it is pending (the first one runs at once)
    stages = re.findall(r'<li id="stage-(\w+)" class="stage (\w+)"', response.text)
    assert stages == [
        ("terms", "running"),
        ("context", "pending"),
        ("targeting", "pending"),
        ("explanation", "pending"),
        ("decision", "pending"),
    ]
    assert 'id="result-title" tabindex="-1"' in response.text  # demo.js moves the focus there


def test_html_stream_sends_all_hits_at_once_then_updates_badges(web: TestClient) -> None:
    shell = web.post(
        "/", data={"text": "a faggot and a crippled economy", "lang": "en"}, headers={"HX-Request": "true"}
    )
    events = sse_events(web.get(shell.headers["hx-push-url"] + "/stream").text)
    names = [name for name, _ in events]
    assert names == ["analysis", "hit", "verdict", "verdict", "targeting", "explanation", "decision", "done"]
    hits_html = events[1][1]
    assert hits_html.count('class="hit') == 2 and hits_html.count('popover role="dialog"') == 2
    assert 'id="badge-h2"' in hits_html and "checking the context…" in hits_html
    assert '<li id="stage-terms" class="stage done" hx-swap-oob="outerHTML">' in hits_html
    assert "(2 terms found)" in hits_html and '<div id="announce" hx-swap-oob="innerHTML">2 terms found.' in hits_html
    assert '<li id="stage-context" class="stage running" hx-swap-oob="outerHTML">' in hits_html
    assert "(0 of 2 checked)" in hits_html
    assert "(1 of 2 checked)" in events[2][1]
    verdict_html = events[3][1]
    assert '<span class="badge verdict undetermined" id="badge-h2" hx-swap-oob="outerHTML">' in verdict_html
    assert 'id="verdict-h2" hx-swap-oob="outerHTML"' in verdict_html
    assert '<span class="badge verdict undetermined" id="group-h2" hx-swap-oob="outerHTML">' in verdict_html
    assert '<li id="stage-context" class="stage done" hx-swap-oob="outerHTML">' in verdict_html
    assert "“<bdi>crippled</bdi>”: undetermined" in verdict_html  # the line read out by the page's live region
    assert '<li id="stage-targeting" class="stage skipped"' in events[4][1]
    assert '<li id="stage-explanation" class="stage done"' in events[5][1]
    assert "Decision: flagged" in events[6][1]  # the undetermined word cannot change the label
    assert '<li id="stage-decision" class="stage done" hx-swap-oob="outerHTML">' in events[6][1]
    assert "Analysis finished." in events[7][1]


def test_user_text_is_inert_everywhere(web: TestClient) -> None:
    location = web.post("/", data={"text": PAYLOAD, "lang": "en"}, follow_redirects=False).headers["location"]
    for body in (web.get(location).text, web.get(location + "/stream").text):
        assert "<script>alert(1)</script>" not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
        assert "<img src=x" not in body and "&lt;img src=x onerror=alert(2)&gt;" in body
    shell = web.post("/", data={"text": PAYLOAD, "lang": "en"}, headers={"HX-Request": "true"}).text
    assert "<script>alert(1)" not in shell and "<img src=x" not in shell


def test_errors_render_friendly_pages_and_fragments(web: TestClient) -> None:
    page = web.post("/", data={"text": "x" * 2001, "lang": "en"})
    assert page.status_code == 413 and "at most 2,000 are accepted" in page.text
    assert page.template.name == "demo.html"  # type: ignore[attr-defined]  # the form comes back with the text
    fragment = web.post("/", data={"text": "hello", "lang": "xx"}, headers={"HX-Request": "true"})
    assert fragment.status_code == 422 and fragment.text.startswith('<p class="error" role="alert">')
    assert "supported: de, el, en, it, nl" in fragment.text
    # stop 26, found in Chromium: a heading too short to tell its language came back as "A step of the check failed";
    # the form now says why, and the language list is there to choose from
    short = web.post("/", data={"text": "The Junkie"}, headers={"HX-Request": "true"})
    assert short.status_code == 422 and "give the language explicitly" in short.text
    assert web.post("/", data={"text": "The Junkie", "lang": "en"}, headers={"HX-Request": "true"}).status_code == 200
    missing = web.get("/analyses/does-not-exist", headers={"Accept": "text/html"})
    assert missing.status_code == 404 and missing.template.name == "error.html"  # type: ignore[attr-defined]
    assert "no analysis has the id" in missing.text


def test_static_files_and_vendored_licences(web: TestClient) -> None:
    assert web.get("/static/style.css").status_code == 200
    htmx = web.get("/static/vendor/htmx-2.0.11.min.js")
    assert htmx.status_code == 200 and "BSD" in htmx.text[:300]
    assert web.get("/static/vendor/LICENSE-htmx.txt").status_code == 200


def test_config_file_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "unerase.toml"
    config.write_text('max_text_chars = 1234\nmode = "thorough"\n[llm_languages.el]\nbackend = "openai"\nmodel = "m"\n')
    monkeypatch.setenv("UNERASE_CONFIG_FILE", str(config))
    monkeypatch.setenv("UNERASE_MODE", "fast")  # the environment wins over the file
    settings = Settings()
    assert settings.max_text_chars == 1234 and settings.mode == "fast"
    assert settings.llm_for("el").model == "m" and settings.llm_for("en").backend == "none"
