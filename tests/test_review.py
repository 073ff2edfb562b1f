"""The review queue and its actions, through the real app, a real SQLite file and real widget analyses."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from web.models import ModeratorDecision
from web.review import LABELS

from .support.accounts import add_user, login, session_csrf
from .support.review import DEFERRED, FLAGGED, act, audit
from .support.sites import FORUM, TOKEN, add_site, check, routes_under
from .webapp import client, client_on


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    """The app on a SQLite file, and again on PostgreSQL (skipped where no server is configured)."""
    with client_on(request.param, tmp_path, admin_token=TOKEN) as test_client:
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
    # the next item waiting is the other one; its page says what was saved on this one
    assert response.status_code == 303 and response.headers["location"] == f"/review/{world['flagged']}?done={deferred}"
    queue = {item.analysis_id for item in api.get("/review").context["items"]}  # type: ignore[attr-defined]
    assert queue == {world["flagged"]}

    answer = check(api, world["first"], [{"id": "d", "text": DEFERRED}])["d"]
    assert (answer["label"], answer["status"], answer["decided_by"]) == ("flagged", "complete", "moderator")
    document = api.get(f"/api/v1/widget/{world['first']}/analyses/{deferred}", headers={"Origin": FORUM}).json()
    assert document["decision"]["label"] == "flagged" and document["decision"]["decided_by"] == "moderator"
    assert document["explanation"]["text"] == "An insult aimed at a disabled man."

    last = act(api, world["flagged"], action="overturn:not_flagged")
    assert last.status_code == 303 and last.headers["location"] == f"/review?done={world['flagged']}"
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
    controls = ("action-confirm", "action-flag", "action-clear", "review-next", "review-previous", "review-undo")
    for control in (*controls, "explanation"):
        assert control in script.text


def test_two_moderators_deciding_at_once_one_wins_and_both_are_audited(api: TestClient, world: dict[str, str]) -> None:
    flagged = world["flagged"]
    seen = api.get(f"/review/{flagged}").context["item"].decisions  # type: ignore[attr-defined]
    assert len(seen) == 0
    first = act(api, flagged, action="overturn:not_flagged", seen="0")
    assert first.status_code == 303
    # a second moderator whose page was loaded before the first decision (seen=0) decides too
    add_user(api, "other")
    assert login(api, "other").status_code == 303
    second = act(api, flagged, action="confirm", seen="0")
    assert second.status_code == 409 and second.json()["type"].endswith("review-conflict")
    assert "another moderator decided this item" in second.text and "mod decided “not flagged”" in second.text
    page = api.post(
        f"/review/{flagged}",
        data={"csrf": session_csrf(api), "action": "confirm", "seen": "0"},
        headers={"Accept": "text/html"},
    )
    assert page.status_code == 409 and "another moderator decided this item" in page.text  # a page for browsers
    entries = audit(api, flagged)
    assert [(e.action, e.actor) for e in entries] == [("overturn", "mod"), ("conflict", "other"), ("conflict", "other")]
    assert json.loads(entries[1].after)["refused"] == "confirm"
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        decisions = list(db.exec(select(ModeratorDecision)))
    assert [(d.label, d.moderator, d.sequence) for d in decisions] == [("not_flagged", "mod", 1)]
    assert "another moderator had decided first" in api.get(f"/review/{flagged}").text
    # having seen the first decision, the second moderator may decide again
    assert act(api, flagged, action="overturn:flagged", seen="1").status_code == 303


def test_simultaneous_decisions_from_threads_store_exactly_one(api: TestClient, world: dict[str, str]) -> None:
    import threading

    from web.review import Conflict, Review

    review = Review(api.app.state.services.store.engine)  # type: ignore[attr-defined]
    item = review.item(world["flagged"])
    assert item is not None
    start, outcomes = threading.Barrier(4), []

    def decide(name: str, label: str) -> None:
        start.wait()
        try:
            review.act(item, name, "overturn", label)
            outcomes.append("stored")
        except Conflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=decide, args=(f"m{i}", LABELS[i % 2])) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(outcomes) == ["conflict", "conflict", "conflict", "stored"]
    entries = audit(api, world["flagged"])
    assert sorted(e.action for e in entries) == ["conflict", "conflict", "conflict", "overturn"]


def test_spot_checks_bring_automatic_decisions_to_the_queue(tmp_path: Path) -> None:
    with client(tmp_path, admin_token=TOKEN, spot_check_percent=100.0) as api:
        key = add_site(api, "Forum")
        flagged = check(api, key, [{"id": "f", "text": FLAGGED}])["f"]
        add_user(api, "mod")
        assert login(api, "mod").status_code == 303
        items = api.get("/review?kind=spot-check").context["items"]  # type: ignore[attr-defined]
        assert [(i.analysis_id, i.kinds) for i in items] == [(flagged["analysis_id"], ("spot-check",))]
        assert "drawn at random" in items[0].reasons[0]
        assert act(api, flagged["analysis_id"], action="confirm").status_code == 303
        assert api.get("/review").context["items"] == []  # type: ignore[attr-defined]


def test_category_filter(api: TestClient, world: dict[str, str]) -> None:
    def listed(category: str) -> set[str]:
        return {i.analysis_id for i in api.get(f"/review?category={category}").context["items"]}  # type: ignore[attr-defined]

    assert listed("sexual-orientation") == {world["flagged"]}
    assert listed("religion") == set()
    refused = api.get("/review?category=weather")
    assert refused.status_code == 400 and "accepted: gender" in refused.text


def test_term_rules_change_the_sites_next_analyses(api: TestClient, world: dict[str, str]) -> None:
    flagged, site = world["flagged"], world["second"]
    page = api.get(f"/review/{flagged}")
    hits = page.context["result"]["hits"]  # type: ignore[attr-defined]
    junkie = next(h for h in hits if h["surface"] == "junkie")
    faggot = next(h for h in hits if h["surface"] == "faggot")
    assert "Mark ambiguous" in page.text and "Exclude" in page.text
    data = {"csrf": session_csrf(api), "term_id": junkie["term_id"], "rule": "exclude"}
    assert api.post(f"/review/{flagged}/terms", data=data, follow_redirects=False).status_code == 303
    data = {**data, "term_id": faggot["term_id"], "rule": "ambiguous"}
    assert api.post(f"/review/{flagged}/terms", data=data, follow_redirects=False).status_code == 303
    entries = [e for e in audit(api, flagged) if e.action == "term-rule"]
    assert [json.loads(e.after)["rule"] for e in entries] == ["exclude", "ambiguous"]
    assert json.loads(entries[0].before)["rule"] == "none"

    # the same text on that site is analysed again under the new rules; on another site nothing changes
    again = check(api, site, [{"id": "f", "text": FLAGGED}])["f"]
    assert again["analysis_id"] != flagged and again["label"] == "needs_review"
    document = api.get(f"/api/v1/widget/{site}/analyses/{again['analysis_id']}", headers={"Origin": FORUM}).json()
    assert [(h["surface"], h["ambiguous"]) for h in document["hits"]] == [("faggot", True)]
    other = check(api, world["first"], [{"id": "f", "text": FLAGGED}])["f"]
    assert other["label"] == "flagged"

    refused = api.post(f"/review/{flagged}/terms", data={**data, "rule": "forbid"}, follow_redirects=False)
    assert refused.status_code == 400 and "accepted: ambiguous, exclude, none" in refused.text
    unknown = api.post(f"/review/{flagged}/terms", data={**data, "term_id": "xx"}, follow_redirects=False)
    assert unknown.status_code == 400 and "not among this text's hits" in unknown.text
    lifted = api.post(f"/review/{flagged}/terms", data={**data, "rule": "none"}, follow_redirects=False)
    assert lifted.status_code == 303


def test_hit_verdicts_follow_the_decision_unless_chosen(api: TestClient, world: dict[str, str]) -> None:
    from web.review import Review

    review = Review(api.app.state.services.store.engine)  # type: ignore[attr-defined]
    item = review.item(world["flagged"])
    assert item is not None
    ids = [h["id"] for h in item.document["hits"]]
    assert review.hit_verdicts(item, "not_flagged", {}) == dict.fromkeys(ids, "neutral")
    assert review.hit_verdicts(item, "flagged", {}) == dict.fromkeys(ids, "contentious")
    chosen = {ids[0]: "neutral", ids[1]: "skip"}
    assert review.hit_verdicts(item, "flagged", chosen) == {ids[0]: "neutral"}
    deferred = review.item(world["deferred"])
    assert deferred is not None
    (only,) = [h["id"] for h in deferred.document["hits"]]  # one ambiguous hit, undetermined
    assert review.hit_verdicts(deferred, "flagged", {}) == {only: "contentious"}
    assert review.hit_verdicts(deferred, "not_flagged", {}) == {only: "neutral"}
    # a word the analysis read as quoted was not cleared for its sense: "not flagged" keeps no example of it
    hits = [{**h, "verdict": {**(h["verdict"] or {}), "use": "quoted"}} for h in deferred.document["hits"]]
    quoted = dataclasses.replace(deferred, document={**deferred.document, "hits": hits})
    assert review.hit_verdicts(quoted, "not_flagged", {}) == {}
    assert review.hit_verdicts(quoted, "not_flagged", {only: "neutral"}) == {only: "neutral"}


def test_decisions_become_precedents_shown_on_similar_items(api: TestClient, world: dict[str, str]) -> None:
    from web.models import Precedent

    deferred = world["deferred"]
    assert act(api, deferred, action="overturn:not_flagged").status_code == 303
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        rows = list(db.exec(select(Precedent)))
    assert [(p.analysis_id, p.verdict, p.moderator) for p in rows] == [(deferred, "neutral", "mod")]
    # a second decision on the same item replaces its examples instead of adding to them
    assert act(api, deferred, action="overturn:flagged", seen="1").status_code == 303
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        rows = list(db.exec(select(Precedent)))
    assert [(p.analysis_id, p.verdict) for p in rows] == [(deferred, "contentious")]
    similar = check(api, world["first"], [{"id": "s", "text": "the strike left her crippled"}])["s"]
    page = api.get(f"/review/{similar['analysis_id']}")
    assert page.status_code == 200 and "Similar past decisions" in page.text
    assert f'href="/review/{deferred}"' in page.text


def test_three_agreeing_decisions_decide_the_next_similar_post_without_anyone(
    api: TestClient, world: dict[str, str]
) -> None:
    site = world["first"]
    texts = [
        "the strike left him crippled for a week",
        "the long strike left them crippled for a week",
        "that strike left us crippled for a week or more",
    ]
    for number, text in enumerate(texts):
        answer = check(api, site, [{"id": f"p{number}", "text": text}])[f"p{number}"]
        assert answer["label"] == "needs_review"
        assert act(api, answer["analysis_id"], action="overturn:not_flagged").status_code == 303
    new = check(api, site, [{"id": "new", "text": "the strike left me crippled for a week"}])["new"]
    assert new["label"] == "not_flagged"
    document = api.get(f"/api/v1/widget/{site}/analyses/{new['analysis_id']}", headers={"Origin": FORUM}).json()
    (hit,) = document["hits"]
    assert hit["verdict"]["decided_by"] == "precedent" and hit["verdict"]["status"] == "neutral"
    assert len(hit["verdict"]["precedents"]) == 3
    # another site's moderators have decided nothing: the same post there still waits for a person
    other = check(api, world["second"], [{"id": "new", "text": "the strike left me crippled for a week"}])["new"]
    assert other["label"] == "needs_review"


def test_every_review_route_refuses_anonymous_and_unchecked_requests(api: TestClient, world: dict[str, str]) -> None:
    review_routes = routes_under(api, "/review")
    assert {path for _, path in review_routes} >= {"/review", "/review/quality", "/review/decisions.csv"}
    assert ("POST", f"/review/{'0' * 32}/terms") in review_routes
    api.post("/logout", data={"csrf": session_csrf(api)})
    for method, path in review_routes:
        page = api.request(method, path, follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"].startswith("/login"), (method, path)
        call = api.request(method, path, headers={"Accept": "application/json"}, follow_redirects=False)
        assert call.status_code in (303, 401), (method, path)
    # signed in, a form without the session's CSRF token is refused on every POST
    assert login(api, "mod").status_code == 303
    for method, path in review_routes:
        if method == "POST":
            path = path.replace("0" * 32, world["flagged"])
            refused = api.post(path, data={"action": "note", "note": "x", "term_id": "t", "rule": "none"})
            assert refused.status_code == 403, path
    assert audit(api, world["flagged"]) == []


def test_a_moderator_cannot_reach_admin_settings(api: TestClient) -> None:
    admin_routes = routes_under(api, "/admin")
    assert ("GET", "/admin/sites/nosuchsite") in admin_routes and ("POST", "/admin/sites") in admin_routes
    add_user(api, "mod")
    assert login(api, "mod").status_code == 303
    csrf = session_csrf(api)
    for method, path in admin_routes:
        response = api.request(method, path, data={"csrf": csrf} if method == "POST" else None)
        assert response.status_code == 403, (method, path, response.status_code)
