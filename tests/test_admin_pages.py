"""The admin pages as a browser meets them (issue 16): a login redirect instead of an error page, a confirmation
after each save, and the embed snippet in a code block with a copy button (a static script: the CSP allows no
inline one). The admin API keeps answering problem+json."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from .support.accounts import add_user, login
from .webapp import client

TOKEN = "an-admin-token-for-tests"
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{TOKEN}".encode()).decode()}


@pytest.fixture
def api(tmp_path: Path) -> TestClient:
    with client(tmp_path, admin_token=TOKEN) as test_client:
        yield test_client


@pytest.mark.parametrize("token", [None, TOKEN])
@pytest.mark.parametrize("path", ["/admin/sites", "/admin/sites/s_somekey", "/admin/sites?updated=x"])
def test_admin_pages_send_a_browser_without_a_session_to_login(tmp_path: Path, token: str | None, path: str) -> None:
    with client(tmp_path, admin_token=token) as api:
        page = api.get(path, follow_redirects=False)
        assert page.status_code == 303
        assert page.headers["location"] == "/login?next=" + path.replace("/", "%2F").replace("?", "%3F").replace(
            "=", "%3D"
        )
        # a form posted without a session goes the same way (nothing is saved)
        posted = api.post("/admin/sites", data={"name": "x", "csrf": "x"}, follow_redirects=False)
        assert posted.status_code == 303 and posted.headers["location"].startswith("/login?next=")
        # the API still answers with problem+json, never a redirect
        answer = api.get("/api/v1/sites")
        assert answer.status_code == (401 if token else 403)
        assert answer.headers["content-type"].startswith("application/problem+json")


def test_after_login_the_admin_lands_back_on_the_page(api: TestClient) -> None:
    add_user(api, "boss", role="admin")
    first = api.get("/admin/sites", follow_redirects=False)
    target = first.headers["location"].split("next=", 1)[1]
    login_page = api.get(first.headers["location"])
    assert "use the admin token" in login_page.text and 'href="/admin/token?next=/admin/sites"' in login_page.text
    landed = login(api, "boss", next="/admin/sites")
    assert landed.status_code == 303 and landed.headers["location"] == "/admin/sites" and target == "%2Fadmin%2Fsites"
    assert api.get("/admin/sites").status_code == 200


def test_the_token_page_asks_for_the_token_then_goes_on(api: TestClient) -> None:
    challenge = api.get("/admin/token?next=/admin/sites", follow_redirects=False)
    assert challenge.status_code == 401 and challenge.headers["www-authenticate"].startswith("Basic")
    passed = api.get("/admin/token?next=/admin/sites", headers=BASIC, follow_redirects=False)
    assert passed.status_code == 303 and passed.headers["location"] == "/admin/sites"
    elsewhere = api.get("/admin/token?next=//evil.example/", headers=BASIC, follow_redirects=False)
    assert elsewhere.headers["location"] == "/"
    # credentials the browser keeps after that open the pages without a redirect
    assert api.get("/admin/sites", headers=BASIC, follow_redirects=False).status_code == 200


def test_adding_a_site_confirms_it_with_the_snippet_at_the_top(api: TestClient) -> None:
    page = api.get("/admin/sites", headers=BASIC)
    assert "Added the site" not in page.text and "Saved the settings" not in page.text
    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    added = api.post(
        "/admin/sites", data={"name": "Riverside <forum>", "csrf": csrf}, headers=BASIC, follow_redirects=False
    )
    assert added.status_code == 303
    location = added.headers["location"]
    key = re.fullmatch(r"/admin/sites\?added=(s_[\w-]+)#site-\1", location)
    assert key is not None, location
    confirmed = api.get(location, headers=BASIC).text
    flash = confirmed.index('class="flash card" role="status"')
    assert flash < confirmed.index('class="lead"')  # before everything else on the page
    assert "Added the site “Riverside &lt;forum&gt;”" in confirmed
    snippet = (
        f'<pre><code id="snippet-added">&lt;script src="http://testserver/widget.js" data-site="{key[1]}" async'
        "&gt;&lt;/script&gt;</code></pre>"
    )
    assert snippet in confirmed
    assert '<button type="button" class="copy" data-copy="snippet-added" hidden>Copy the snippet</button>' in confirmed
    assert '<script src="http://testserver/static/admin.js" defer></script>' in confirmed
    assert "<script>" not in confirmed  # no inline script for the CSP to refuse

    updated = api.post(
        "/admin/sites",
        data={"name": "Riverside forum", "key": key[1], "csrf": csrf, "mode": "thorough"},
        headers=BASIC,
        follow_redirects=False,
    )
    assert updated.headers["location"] == f"/admin/sites?updated={key[1]}#site-{key[1]}"
    assert "Saved the settings of “Riverside forum”." in api.get(updated.headers["location"], headers=BASIC).text
    # a key that names no site shows no confirmation rather than an error
    assert 'role="status">Saved' not in api.get("/admin/sites?updated=s_nothing", headers=BASIC).text


def test_saving_values_on_a_sites_page_confirms_it(api: TestClient) -> None:
    page = api.get("/admin/sites", headers=BASIC)
    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    location = api.post(
        "/admin/sites", data={"name": "Values forum", "csrf": csrf}, headers=BASIC, follow_redirects=False
    ).headers["location"]
    key = location.split("added=", 1)[1].split("#", 1)[0]
    values = {"value_tp": "1", "value_tn": "1", "value_fp": "-4", "value_fn": "-2", "value_r": "-0.5", "csrf": csrf}
    saved = api.post(f"/admin/sites/{key}/values", data=values, headers=BASIC, follow_redirects=False)
    assert saved.headers["location"] == f"/admin/sites/{key}?saved=values"
    assert "Saved: the values of the outcomes." in api.get(saved.headers["location"], headers=BASIC).text
    assert "Saved:" not in api.get(f"/admin/sites/{key}?saved=nonsense", headers=BASIC).text


def test_the_copy_script_is_static_and_hides_nothing_without_it() -> None:
    script = (Path(__file__).resolve().parents[1] / "static" / "admin.js").read_text(encoding="utf-8")
    assert "navigator.clipboard" in script and "button.hidden = false" in script
