"""Hardening of signed-in traffic and request bodies: nothing a signed-in person sees is kept by a cache, the admin
API needs the CSRF token when the browser authenticates it on its own, and bodies are capped before they are read."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from web.render import isolate

from .support.accounts import add_user, login, session_csrf
from .support.review import act
from .support.sites import FORUM, add_site, check, routes_under
from .webapp import client

TOKEN = "test-admin-token"  # the one test_review's add_site sends
BEARER = {"Authorization": f"Bearer {TOKEN}"}
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{TOKEN}".encode()).decode()}
DEFERRED = "the strike left him crippled"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with client(tmp_path, admin_token=TOKEN) as test_client:
        yield test_client


# FastAPI's own pages about the API: plain routes that never look at who is asking, the same for everyone
API_DOCS = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc"}


def every_route(api: TestClient, analysis_id: str) -> list[tuple[str, str]]:
    """(method, path) of every route of the app, placeholders filled: a real analysis id, unknown keys and jobs."""
    found = []
    for method, path in routes_under(api, "/"):
        if path in API_DOCS:
            continue
        path = path.replace("0" * 32, analysis_id)
        found.append((method, re.sub(r"\{[^}]*\}", "nosuch", path)))
    return found


# -- Cache-Control: no-store ---------------------------------------------------------------------
def test_every_response_to_a_signed_in_request_is_not_stored(api: TestClient) -> None:
    site = add_site(api, "Forum")
    analysis_id = check(api, site, [{"id": "d", "text": DEFERRED}])["d"]["analysis_id"]
    add_user(api, "boss", role="admin")
    assert login(api, "boss").status_code == 303
    routes = every_route(api, analysis_id)
    statuses = {}
    for method, path in routes:
        response = api.request(method, path, follow_redirects=False)
        statuses[(method, path)] = response.status_code
        assert response.headers.get("cache-control") == "no-store", (method, path, response.status_code)
    # the pages and exports that matter answered in full, not only with errors
    for path in ("/review", f"/review/{analysis_id}", "/review/quality", "/review/decisions.csv", "/account",
                 "/admin/sites", "/api/v1/sites", "/api/v1/me", f"/analyses/{analysis_id}/statement", "/"):  # fmt: skip
        assert statuses[("GET", path)] == 200, path
    assert session_csrf(api)  # the walk's unchecked POST /logout did not end the session

    # static files stay cacheable for a signed-in browser: they are the same for everyone
    assert "no-store" not in api.get("/static/style.css").headers.get("cache-control", "")
    # the admin token is a credential too
    api.cookies.clear()
    assert api.get("/api/v1/sites", headers=BEARER).headers["cache-control"] == "no-store"
    assert api.get("/admin/sites", headers=BASIC).headers["cache-control"] == "no-store"
    # an anonymous visitor's public pages are not affected
    for path in ("/", f"/analyses/{analysis_id}/statement", f"/api/v1/analyses/{analysis_id}"):
        assert "no-store" not in api.get(path).headers.get("cache-control", ""), path


def test_a_route_that_sets_its_own_cache_control_is_still_not_stored_when_signed_in(api: TestClient) -> None:
    add_user(api, "mod")
    assert login(api, "mod").status_code == 303
    response = api.get("/widget.js")  # public and cacheable for everyone else
    assert response.status_code == 200 and response.headers.get_list("cache-control") == ["no-store"]


# -- CSRF on the admin API -------------------------------------------------------------------------
def names(api: TestClient) -> list[str]:
    """The names of the registered sites (the demo forum's own site among them)."""
    return [site["name"] for site in api.get("/api/v1/sites", headers=BEARER).json()]


def test_the_admin_api_needs_the_csrf_token_with_a_session(api: TestClient) -> None:
    add_user(api, "boss", role="admin")
    assert login(api, "boss").status_code == 303
    body = {"name": "Forum", "allowed_origins": [FORUM]}
    refused = api.post("/api/v1/sites", json=body)
    assert refused.status_code == 403 and refused.headers["content-type"] == "application/problem+json"
    assert "X-CSRF-Token" in refused.json()["detail"], refused.json()
    wrong = api.post("/api/v1/sites", json=body, headers={"X-CSRF-Token": "forged"})
    assert wrong.status_code == 403 and "X-CSRF-Token" in wrong.json()["detail"]
    assert "Forum" not in names(api)  # nothing was made

    token = api.get("/api/v1/me").json()["csrf_token"]  # where a script of the admin's finds it
    assert token == session_csrf(api)
    added = api.post("/api/v1/sites", json=body, headers={"X-CSRF-Token": token})
    assert added.status_code == 201, added.text
    key = added.json()["key"]
    assert api.patch(f"/api/v1/sites/{key}", json={"mode": "thorough"}).status_code == 403
    changed = api.patch(f"/api/v1/sites/{key}", json={"mode": "thorough"}, headers={"X-CSRF-Token": token})
    assert changed.status_code == 200 and changed.json()["mode"] == "thorough"
    assert api.get("/api/v1/sites").status_code == 200  # reading needs no token


def test_every_admin_api_route_that_changes_something_refuses_a_session_without_the_token(api: TestClient) -> None:
    key = add_site(api, "Forum")
    add_user(api, "boss", role="admin")
    assert login(api, "boss").status_code == 303
    unsafe = [(m, p.replace("nosuchsite", key)) for m, p in routes_under(api, "/api/v1/sites") if m != "GET"]
    assert ("POST", "/api/v1/sites") in unsafe and ("PATCH", f"/api/v1/sites/{key}") in unsafe
    for method, path in unsafe:
        response = api.request(method, path, json={"name": "Changed", "mode": "thorough"})
        assert response.status_code == 403 and "X-CSRF-Token" in response.json()["detail"], (method, path)
    assert names(api).count("Forum") == 1 and "Changed" not in names(api)


def test_the_admin_token_works_without_a_csrf_token_as_a_bearer_but_not_as_basic(api: TestClient) -> None:
    body = {"name": "Forum", "allowed_origins": [FORUM]}
    assert api.post("/api/v1/sites", json=body, headers=BEARER).status_code == 201
    # a browser that once typed the token into the Basic prompt sends it by itself, like a cookie
    refused = api.post("/api/v1/sites", json=body, headers=BASIC)
    assert refused.status_code == 403 and "X-CSRF-Token" in refused.json()["detail"]
    page_token = api.get("/admin/sites", headers=BASIC).context["csrf"]  # type: ignore[attr-defined]
    assert api.post("/api/v1/sites", json=body, headers={**BASIC, "X-CSRF-Token": page_token}).status_code == 201
    assert names(api).count("Forum") == 2


# -- request body limit ------------------------------------------------------------------------------
LIMIT = 100_000
CHUNK = 10_000
MULTIPART = "multipart/form-data; boundary=b"


def raw_post(
    api: TestClient, path: str, chunks: int, headers: dict[str, str], start: bytes = b'{"text": "'
) -> tuple[int, dict[str, str], Any, int]:
    """POSTs `start` and then `chunks` chunks of CHUNK bytes straight to the ASGI app, on the app's own event
    loop, counting how many chunks the app asked for (the test client would read a streamed body whole first)."""
    pulled = 0
    response: dict[str, Any] = {"body": b""}

    async def receive() -> dict[str, Any]:
        nonlocal pulled
        if pulled >= chunks:
            return {"type": "http.disconnect"}
        pulled += 1
        body = start + b"x" * CHUNK if pulled == 1 else b"x" * CHUNK
        return {"type": "http.request", "body": body, "more_body": pulled < chunks}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            response["status"] = message["status"]
            response["headers"] = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            response["body"] += message.get("body", b"")

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in {"host": "testserver", **headers}.items()],
        "client": ("127.0.0.1", 50000),
        "server": ("testserver", 80),
    }
    portal = api.portal
    assert portal is not None
    portal.call(api.app, scope, receive, send)
    return response["status"], response["headers"], response["body"], pulled


def test_a_body_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    with client(tmp_path, max_body_bytes=LIMIT) as api:
        total = 1_000  # 10 MB announced by Content-Length
        json_headers = {"content-type": "application/json", "content-length": str(total * CHUNK)}
        status, headers, body, pulled = raw_post(api, "/api/v1/analyses", total, json_headers)
        assert status == 413 and headers["content-type"] == "application/problem+json"
        assert json.loads(body)["type"] == "/problems/content-too-large" and b"100,000 bytes" in body, body
        assert pulled == 0  # refused on the announced length: not one byte read, nothing parsed

        # chunked, no Content-Length: counted as it arrives, refused once past the limit
        status, headers, body, pulled = raw_post(api, "/api/v1/analyses", total, {"content-type": "application/json"})
        assert status == 413 and headers["content-type"] == "application/problem+json"
        assert json.loads(body)["type"] == "/problems/content-too-large" and b"100,000 bytes" in body, body
        assert pulled <= LIMIT // CHUNK + 1

        # the widget, the annotations and the demo form are capped the same way
        for path, kind in [
            ("/api/v1/widget/nosuch/check", "application/json"),
            ("/api/v1/annotations", "application/json"),
            ("/", "application/x-www-form-urlencoded"),
        ]:
            status, _, body, pulled = raw_post(api, path, total, {"content-type": kind})
            assert status == 413 and pulled <= LIMIT // CHUNK + 1, (path, status, body)

        # through the test client too, with the error page a browser gets
        big = api.post("/api/v1/analyses", content=b'{"text": "' + b"x" * 10_000_000 + b'"}',
                       headers={"content-type": "application/json"})  # fmt: skip
        assert big.status_code == 413 and "100,000 bytes" in big.json()["detail"]
        page = api.post("/", data={"text": "x" * 200_000}, headers={"Accept": "text/html"})
        assert page.status_code == 413 and "100,000 bytes" in page.text
        # a body within the limit is still analysed
        assert api.post("/api/v1/analyses", json={"text": "the strike left him crippled"}).status_code == 201


def test_batch_uploads_keep_their_own_larger_limit(tmp_path: Path) -> None:
    with client(tmp_path, max_body_bytes=LIMIT, max_upload_bytes=5 * LIMIT) as api:
        data = b"text\n" + b"a perfectly ordinary sentence\n" * 10_000  # 300 kB: over the body limit, under uploads'
        accepted = api.post("/api/v1/batches", files={"file": ("records.csv", data)})
        assert accepted.status_code == 202, accepted.text
        from_page = api.post("/batches", files={"file": ("records.csv", data)}, follow_redirects=False)
        assert from_page.status_code == 303, from_page.text  # the upload form of the batches page too
        too_big = api.post("/api/v1/batches", files={"file": ("records.csv", data * 2)})
        assert too_big.status_code == 413 and "500,000 bytes" in too_big.json()["detail"]
        # far beyond the upload limit: refused as the body arrives, not after it was all spooled to disk
        part = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'
        status, _, body, pulled = raw_post(api, "/api/v1/batches", 1_000, {"content-type": MULTIPART}, part)
        assert status == 413 and b"500,000 bytes" in body and pulled <= 6 * LIMIT // CHUNK + 1


# -- bidi isolation on the review pages ------------------------------------------------------------------
RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: unisolated, it reverses everything after it up to the end of the line
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Isolation(HTMLParser):
    """Collects text with a U+202E that is neither inside a <bdi> nor inside an element with a dir attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[tuple[str, bool]] = []  # (tag, isolates)
        self.unisolated: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in VOID:
            self.open.append((tag, tag == "bdi" or any(name == "dir" for name, _ in attrs)))

    def handle_endtag(self, tag: str) -> None:
        for at in range(len(self.open) - 1, -1, -1):  # an implied end (</li> left out) closes what it contains
            if self.open[at][0] == tag:
                del self.open[at:]
                return

    def handle_data(self, data: str) -> None:
        if RLO in data and not any(isolates for _, isolates in self.open):
            self.unisolated.append(data.strip())


def unisolated(page: str) -> list[str]:
    parser = Isolation()
    parser.feed(page)
    return parser.unisolated


def public_analysis(api: TestClient, text: str) -> str:
    answer = api.post("/api/v1/analyses", json={"text": text, "lang": "en"})
    assert answer.status_code == 201, answer.text
    analysis_id: str = answer.json()["id"]
    return analysis_id


def test_user_and_moderator_strings_are_isolated_on_the_review_pages(api: TestClient) -> None:
    site = add_site(api, "Forum")
    text = f"the strike left him crippled {RLO}on purpose, they said"
    analysis_id = check(api, site, [{"id": "d", "text": text}])["d"]["analysis_id"]
    comment = {"analysis_id": analysis_id, "post_id": "d", "helpful": False, "comment": f"{RLO}he was quoting"}
    assert api.post(f"/api/v1/widget/{site}/feedback", json=comment, headers={"Origin": FORUM}).status_code == 201
    add_user(api, "mod")
    assert login(api, "mod").status_code == 303
    queue = api.get("/review")  # before the item is decided and leaves the queue
    for form in (
        {"action": "note", "note": f"{RLO}a note"},
        {"action": "overturn:flagged", "explanation": f"{RLO}why"},
    ):
        done = act(api, analysis_id, **form)
        assert done.status_code == 303, done.text

    pages = {
        "queue": queue,
        "item": api.get(f"/review/{analysis_id}"),
        "statement": api.get(f"/analyses/{analysis_id}/statement"),
        # a site's posts are the site's (issue 14), so the permalink page is checked with a public analysis
        "demo": api.get(f"/analyses/{public_analysis(api, text)}"),
    }
    for name, page in pages.items():
        assert page.status_code == 200, name
        assert RLO in page.text, f"the {name} page does not show the strings this test checks"
        assert unisolated(page.text) == [], name
    item = pages["item"].text
    for shown in (f"<bdi>{RLO}he was quoting</bdi>", f"<bdi>{RLO}a note</bdi>", f"<bdi>{RLO}why</bdi>"):
        assert shown in item
    assert 'dir="auto"' in item and "“<bdi>crippled</bdi>”" in item


def test_the_bdi_filter_escapes_what_it_isolates() -> None:
    assert isolate(f"<b>{RLO}x</b>") == f"<bdi>&lt;b&gt;{RLO}x&lt;/b&gt;</bdi>"
