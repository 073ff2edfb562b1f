"""The review queue and its actions, through the real app, a real SQLite file and real widget analyses."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from web.models import AuditEntry, ModeratorDecision

from .test_auth import add_user, login, session_csrf
from .webapp import client

FORUM = "https://forum.example"
TOKEN = "test-admin-token"
DEFERRED = "the strike left him crippled"  # an ambiguous term and no model: needs_review
FLAGGED = "a faggot and a <b>junkie</b>"


def add_site(api: TestClient, name: str) -> str:
    body = {"name": name, "allowed_origins": [FORUM]}
    response = api.post("/api/v1/sites", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def check(api: TestClient, key: str, posts: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    response = api.post(f"/api/v1/widget/{key}/check", json={"lang": "en", "posts": posts}, headers={"Origin": FORUM})
    assert response.status_code == 200, response.text
    return {r["id"]: r for r in response.json()["results"]}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with client(tmp_path, admin_token=TOKEN) as test_client:
        yield test_client


@pytest.fixture
def world(api: TestClient) -> dict[str, str]:
    """Two sites: one post deferred on the first, one flagged post on the second that a reader disputes."""
    first, second = add_site(api, "Forum one"), add_site(api, "Forum two")
    deferred = check(api, first, [{"id": "d", "text": DEFERRED}])["d"]
    flagged = check(api, second, [{"id": "f", "text": FLAGGED}])["f"]
    assert (deferred["label"], flagged["label"]) == ("needs_review", "flagged")
    body = {"analysis_id": flagged["analysis_id"], "post_id": "f", "helpful": False, "comment": "he was quoting"}
    assert api.post(f"/api/v1/widget/{second}/feedback", json=body, headers={"Origin": FORUM}).status_code == 201
    add_user(api, "mod")
    assert login(api, "mod").status_code == 303
    return {"first": first, "second": second, "deferred": deferred["analysis_id"], "flagged": flagged["analysis_id"]}


def audit(api: TestClient, analysis_id: str) -> list[AuditEntry]:
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        query = select(AuditEntry).where(AuditEntry.analysis_id == analysis_id).order_by(col(AuditEntry.id))
        return list(db.exec(query))


def act(api: TestClient, analysis_id: str, **form: str) -> Any:
    data = {"csrf": session_csrf(api), **form}
    return api.post(f"/review/{analysis_id}", data=data, follow_redirects=False)


def test_queue_needs_login_and_a_moderator(api: TestClient) -> None:
    for path in ("/review", "/review/abc"):
        response = api.get(path, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/login?next=")
    assert api.post("/review/abc", data={"action": "note"}, follow_redirects=False).status_code == 303


def test_queue_lists_deferred_and_disputed_items_and_filters_them(api: TestClient, world: dict[str, str]) -> None:
    page = api.get("/review")
    assert page.status_code == 200 and page.template.name == "review.html"  # type: ignore[attr-defined]
    items = {item.analysis_id: item for item in page.context["items"]}  # type: ignore[attr-defined]
    assert set(items) == {world["deferred"], world["flagged"]}
    assert items[world["deferred"]].kinds == ("deferred",) and items[world["deferred"]].site_name == "Forum one"
    assert items[world["flagged"]].reasons == ("disputed by a reader: he was quoting",)
    assert items[world["flagged"]].site_key == world["second"] and items[world["flagged"]].language == "en"
    assert "disputed by a reader: he was quoting" in page.text and "&lt;b&gt;junkie&lt;/b&gt;" in page.text

    def listed(query: str) -> set[str]:
        response = api.get("/review?" + query)
        assert response.status_code == 200, response.text
        return {item.analysis_id for item in response.context["items"]}  # type: ignore[attr-defined]

    assert listed("kind=deferred") == {world["deferred"]}
    assert listed("kind=disputed") == {world["flagged"]}
    assert listed(f"site={world['second']}") == {world["flagged"]}
    assert listed("language=en") == {world["deferred"], world["flagged"]}
    assert listed("language=de") == set()
    refused = api.get("/review?kind=random")
    assert refused.status_code == 400 and "accepted: deferred, disputed" in refused.text


def test_item_page_shows_hits_escaped_with_feedback(api: TestClient, world: dict[str, str]) -> None:
    page = api.get(f"/review/{world['flagged']}")
    assert page.status_code == 200 and page.template.name == "review_item.html"  # type: ignore[attr-defined]
    assert '<button type="button" class="hit"' in page.text
    assert "&lt;b&gt;" in page.text and "<b>junkie" not in page.text
    assert "he was quoting" in page.text and 'name="csrf"' in page.text
    assert 'value="confirm"' in page.text and "/static/review.js" in page.text
    deferred = api.get(f"/review/{world['deferred']}")
    assert 'value="confirm"' not in deferred.text  # needs_review is no label to confirm
    assert api.get("/review/nosuchid").status_code == 404


def test_actions_need_the_csrf_token(api: TestClient, world: dict[str, str]) -> None:
    for data in ({"action": "confirm"}, {"action": "confirm", "csrf": "forged"}):
        response = api.post(f"/review/{world['flagged']}", data=data, follow_redirects=False)
        assert response.status_code == 403
    assert audit(api, world["flagged"]) == []


def test_each_action_is_audited_with_before_and_after(api: TestClient, world: dict[str, str]) -> None:
    flagged = world["flagged"]
    noted = act(api, flagged, action="note", note="looks like a quote")
    assert noted.status_code == 303
    confirmed = act(api, flagged, action="confirm")
    assert confirmed.status_code == 303
    explained = act(api, flagged, action="explain", explanation="A slur, even when quoted here.")
    overturned = act(api, flagged, action="overturn:not_flagged", note="quoted to criticise it")
    assert explained.status_code == overturned.status_code == 303
    entries = audit(api, flagged)
    assert [(e.action, e.actor) for e in entries] == [
        ("note", "mod"),
        ("confirm", "mod"),
        ("explain", "mod"),
        ("overturn", "mod"),
    ]
    before = [json.loads(e.before) for e in entries]
    after = [json.loads(e.after) for e in entries]
    assert before[0]["label"] == after[0]["label"] == "flagged" and after[0]["note"] == "looks like a quote"
    assert before[1]["decided_by"] == "engine" and after[1]["decided_by"] == "moderator"
    assert after[2]["explanation"] == "A slur, even when quoted here." and after[2]["label"] == "flagged"
    assert before[3]["label"] == "flagged" and after[3]["label"] == "not_flagged"
    assert after[3]["explanation"] == "A slur, even when quoted here."  # an overturn keeps the edited text
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        decisions = list(db.exec(select(ModeratorDecision).order_by(col(ModeratorDecision.id))))
    assert [d.label for d in decisions] == ["flagged", "flagged", "not_flagged"]  # a note decides nothing
    assert decisions[-1].note == "quoted to criticise it" and decisions[-1].moderator == "mod"
    history = api.get(f"/review/{flagged}").text
    assert "looks like a quote" in history and "overturn" in history

    refused = act(api, world["deferred"], action="confirm")
    assert refused.status_code == 409 and "overturn to flagged or not_flagged" in refused.text
    assert act(api, flagged, action="overturn:maybe").status_code == 400
    assert act(api, flagged, action="delete").status_code == 400
    assert act(api, flagged, action="note").status_code == 400  # an empty note
    assert len(audit(api, flagged)) == 4 and audit(api, world["deferred"]) == []


def test_a_decision_leaves_the_queue_and_reaches_the_widget(api: TestClient, world: dict[str, str]) -> None:
    deferred = world["deferred"]
    document = api.get(f"/api/v1/widget/{world['first']}/analyses/{deferred}", headers={"Origin": FORUM})
    assert document.json()["decision"]["label"] == "needs_review"  # now kept as bytes by the widget
    response = act(api, deferred, action="overturn:flagged", explanation="An insult aimed at a disabled man.")
    # the next item waiting is the other one
    assert response.status_code == 303 and response.headers["location"] == f"/review/{world['flagged']}"
    queue = {item.analysis_id for item in api.get("/review").context["items"]}  # type: ignore[attr-defined]
    assert queue == {world["flagged"]}

    answer = check(api, world["first"], [{"id": "d", "text": DEFERRED}])["d"]
    assert (answer["label"], answer["status"], answer["decided_by"]) == ("flagged", "complete", "moderator")
    document = api.get(f"/api/v1/widget/{world['first']}/analyses/{deferred}", headers={"Origin": FORUM}).json()
    assert document["decision"]["label"] == "flagged" and document["decision"]["decided_by"] == "moderator"
    assert document["explanation"]["text"] == "An insult aimed at a disabled man."

    last = act(api, world["flagged"], action="overturn:not_flagged")
    assert last.status_code == 303 and last.headers["location"] == "/review"
    assert api.get("/review").context["items"] == []  # type: ignore[attr-defined]
    # a reader disputing the moderator's answer brings the item back
    body = {"analysis_id": deferred, "post_id": "d", "helpful": False, "comment": "not an insult"}
    disputed = api.post(f"/api/v1/widget/{world['first']}/feedback", json=body, headers={"Origin": FORUM})
    assert disputed.status_code == 201
    back = api.get("/review?kind=disputed").context["items"]  # type: ignore[attr-defined]
    assert [item.analysis_id for item in back] == [deferred]


def test_keyboard_script_is_static_and_clicks_existing_controls(api: TestClient) -> None:
    script = api.get("/static/review.js")
    assert script.status_code == 200
    for control in ("action-confirm", "action-flag", "action-clear", "review-next", "review-previous", "explanation"):
        assert control in script.text
