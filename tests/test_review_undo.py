"""The moderators' second look (issue 16): what was saved and its undo, the decided view, decisions from the queue
list, the reader's dispute at the top of the item, and the public demo's analyses kept out of the queue.

On SQLite and on PostgreSQL: an undo removes a decision row under the same conflict rule as a decision.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from web.models import ModeratorDecision, Precedent
from web.review import UNDO_SECONDS, Review, ReviewError

from .support.accounts import add_user, login, session_csrf
from .support.review import DEFERRED, act, audit
from .support.sites import FORUM, TOKEN, add_site, check
from .webapp import client, client_on


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    with client_on(request.param, tmp_path, admin_token=TOKEN) as test_client:
        yield test_client


@pytest.fixture
def items(api: TestClient) -> dict[str, str]:
    """Two deferred posts and one flagged post a reader disputes, on one site; "mod" is signed in."""
    site = add_site(api, "Forum")
    results = check(
        api,
        site,
        [
            {"id": "a", "text": DEFERRED},
            {"id": "b", "text": "the fall left her crippled for a year"},
            {"id": "c", "text": "a faggot and a junkie"},
        ],
    )
    assert [results[k]["label"] for k in "abc"] == ["needs_review", "needs_review", "flagged"]
    body = {"analysis_id": results["c"]["analysis_id"], "post_id": "c", "helpful": False, "comment": "he was quoting"}
    assert api.post(f"/api/v1/widget/{site}/feedback", json=body, headers={"Origin": FORUM}).status_code == 201
    add_user(api, "mod")
    assert login(api, "mod").status_code == 303
    return {"site": site, **{key: results[key]["analysis_id"] for key in "abc"}}


def decisions(api: TestClient, analysis_id: str) -> list[tuple[int, str, str]]:
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        rows = db.exec(
            select(ModeratorDecision)
            .where(ModeratorDecision.analysis_id == analysis_id)
            .order_by(col(ModeratorDecision.sequence))
        )
        return [(row.sequence, row.moderator, row.label) for row in rows]


def undo(api: TestClient, analysis_id: str, sequence: int) -> object:
    data = {"csrf": session_csrf(api), "sequence": str(sequence)}
    return api.post(f"/review/{analysis_id}/undo", data=data, follow_redirects=False)


def widget_label(api: TestClient, site: str, text: str) -> str:
    return str(check(api, site, [{"id": "x", "text": text}])["x"]["label"])


def test_a_decision_is_saved_and_can_be_undone(api: TestClient, items: dict[str, str]) -> None:
    first = items["a"]
    decided = act(api, first, action="overturn:flagged", explanation="Aimed at him.")
    assert decided.status_code == 303 and f"done={first}" in decided.headers["location"]
    page = api.get(decided.headers["location"])
    text = html.unescape(page.text)
    assert "Saved: you decided “flagged”." in text
    assert f'action="/review/{first}/undo"' in page.text and 'name="sequence" value="1"' in page.text
    assert widget_label(api, items["site"], DEFERRED) == "flagged"

    undone = undo(api, first, 1)
    assert undone.status_code == 303 and undone.headers["location"] == f"/review/{first}?undone={first}"
    restored = html.unescape(api.get(undone.headers["location"]).text)
    assert "Undone: the label is “needs review” again, decided by the automatic analysis." in restored
    assert decisions(api, first) == []
    entries = audit(api, first)
    assert [entry.action for entry in entries] == ["overturn", "undo"]
    before, after = json.loads(entries[1].before), json.loads(entries[1].after)
    assert before["label"] == "flagged" and before["decided_by"] == "moderator"
    assert after == {
        "label": "needs_review",
        "decided_by": "engine",
        "moderator": None,
        "explanation": after["explanation"],
        "note": None,
        "undoes": 1,
    }
    # back in the queue, back to "under review" in the widget, and no precedent left from the undone decision
    assert first in {item.analysis_id for item in api.get("/review").context["items"]}  # type: ignore[attr-defined]
    assert widget_label(api, items["site"], DEFERRED) == "needs_review"
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        assert list(db.exec(select(Precedent).where(Precedent.analysis_id == first))) == []
    # the sequence number is free again: the next decision takes it
    assert act(api, first, action="overturn:not_flagged", seen="0").status_code == 303
    assert decisions(api, first) == [(1, "mod", "not_flagged")]
    # undoing twice, or a decision that is not there, is refused
    assert undo(api, first, 2).status_code == 400


def test_an_undo_restores_the_previous_moderators_decision(api: TestClient, items: dict[str, str]) -> None:
    first = items["a"]
    assert act(api, first, action="overturn:flagged", seen="0").status_code == 303
    assert act(api, first, action="overturn:not_flagged", seen="1").status_code == 303
    assert undo(api, first, 2).status_code == 303
    assert decisions(api, first) == [(1, "mod", "flagged")]
    page = html.unescape(api.get(f"/review/{first}?undone={first}").text)
    assert "Undone: the label is “flagged” again, decided by moderator mod." in page
    assert widget_label(api, items["site"], DEFERRED) == "flagged"


def test_an_undo_obeys_the_conflict_rule_and_only_the_author_may_undo(api: TestClient, items: dict[str, str]) -> None:
    first = items["a"]
    assert act(api, first, action="overturn:flagged", seen="0").status_code == 303
    add_user(api, "other")
    assert login(api, "other").status_code == 303
    assert "Undo" not in api.get(f"/review?done={first}").text  # not theirs to undo
    refused = undo(api, first, 1)
    assert refused.status_code == 400 and "only the moderator who made a decision" in html.unescape(refused.text)
    # the other moderator decides after the first one; the first one's undo then comes too late
    assert act(api, first, action="overturn:not_flagged", seen="1").status_code == 303
    assert login(api, "mod").status_code == 303
    conflict = undo(api, first, 1)
    assert conflict.status_code == 409 and "another moderator decided this item" in html.unescape(conflict.text)
    assert decisions(api, first) == [(1, "mod", "flagged"), (2, "other", "not_flagged")]
    entries = audit(api, first)
    assert [(e.action, e.actor) for e in entries] == [("overturn", "mod"), ("overturn", "other"), ("conflict", "mod")]
    assert json.loads(entries[-1].after)["refused"] == "undo"


def test_an_undo_is_refused_after_its_time(api: TestClient, items: dict[str, str]) -> None:
    first = items["a"]
    assert act(api, first, action="overturn:flagged").status_code == 303
    review = Review(api.app.state.services.store.engine)  # type: ignore[attr-defined]
    item = review.item(first)
    assert item is not None and review.undoable(item, "mod") is not None
    later = datetime.now(UTC) + timedelta(seconds=UNDO_SECONDS + 1)
    assert review.undoable(item, "mod", now=later) is None
    with pytest.raises(ReviewError, match=f"undone for {UNDO_SECONDS} seconds"):
        review.undo(item, "mod", 1, now=later)
    assert decisions(api, first) == [(1, "mod", "flagged")]


def test_a_note_is_confirmed_without_an_undo(api: TestClient, items: dict[str, str]) -> None:
    noted = act(api, items["a"], action="note", note="ask the forum's admin")
    page = api.get(noted.headers["location"])
    assert "Saved: your note." in page.text and "/undo" not in page.text


def test_the_queue_list_decides_and_comes_back_to_the_list(api: TestClient, items: dict[str, str]) -> None:
    page = api.get("/review")
    assert page.text.count('value="decide:not_flagged"') == 3 and page.text.count('value="decide:flagged"') == 3
    assert f'aria-describedby="text-{items["a"]}"' in page.text  # each button says which text it decides
    csrf = session_csrf(api)
    form = {"csrf": csrf, "seen": "0", "back": "queue"}
    approved = api.post(
        f"/review/{items['a']}?site={items['site']}",
        data={**form, "action": "decide:not_flagged"},
        follow_redirects=False,
    )
    assert approved.status_code == 303
    assert approved.headers["location"] == f"/review?site={items['site']}&done={items['a']}"
    # agreeing with the automatic label is a confirmation, disagreeing an overturn
    rejected = api.post(f"/review/{items['c']}", data={**form, "action": "decide:flagged"}, follow_redirects=False)
    assert rejected.headers["location"] == f"/review?done={items['c']}"
    assert [e.action for e in audit(api, items["a"])] == ["overturn"]
    assert [e.action for e in audit(api, items["c"])] == ["confirm"]
    listed = api.get(rejected.headers["location"])
    assert {item.analysis_id for item in listed.context["items"]} == {items["b"]}  # type: ignore[attr-defined]
    assert "Saved: you confirmed “flagged”." in html.unescape(listed.text) and "Undo (u)" in listed.text


def test_the_decided_view_lists_and_filters_decisions(api: TestClient, items: dict[str, str]) -> None:
    assert "No decided items" in api.get("/review/decided").text
    assert act(api, items["a"], action="overturn:flagged").status_code == 303
    add_user(api, "other")
    assert login(api, "other").status_code == 303
    assert act(api, items["b"], action="overturn:not_flagged").status_code == 303

    def listed(query: str = "") -> list[tuple[str, str, str]]:
        page = api.get("/review/decided" + query)
        assert page.status_code == 200, page.text
        return [(i.analysis_id, i.moderator, i.label) for i in page.context["items"]]  # type: ignore[attr-defined]

    assert listed() == [(items["b"], "other", "not_flagged"), (items["a"], "mod", "flagged")]
    assert listed("?label=flagged") == [(items["a"], "mod", "flagged")]
    assert listed("?moderator=other") == [(items["b"], "other", "not_flagged")]
    assert listed(f"?site={items['site']}&language=en") == listed()
    assert listed("?site=s_elsewhere") == []
    today = datetime.now(UTC).date()
    assert len(listed(f"?since={today.isoformat()}")) == 2
    assert listed(f"?since={(today + timedelta(days=1)).isoformat()}") == []
    # a later decision replaces the earlier one in the view
    assert act(api, items["a"], action="overturn:not_flagged").status_code == 303
    assert (items["a"], "other", "not_flagged") in listed() and len(listed()) == 2
    page = api.get("/review/decided?label=not_flagged").text
    assert f'href="/review/{items["a"]}"' in page and "<td>other</td>" in page
    assert api.get("/review/decided?label=maybe").status_code == 400
    assert api.get("/review/decided?since=yesterday").status_code == 400


def test_the_readers_dispute_is_at_the_top_of_the_item(api: TestClient, items: dict[str, str]) -> None:
    page = api.get(f"/review/{items['c']}").text
    dispute = page.index("A reader says this is wrong")
    assert dispute < page.index("<h2>The text</h2>") < page.index('id="now-title"') < page.index("<h2>Terms</h2>")
    assert "“<bdi>he was quoting</bdi>”" in page[dispute : dispute + 400]
    assert "A reader says this is wrong" not in api.get(f"/review/{items['a']}").text


@pytest.mark.parametrize("included", [False, True])
def test_demo_analyses_stay_out_of_the_queue_unless_a_setting_includes_them(tmp_path: Path, included: bool) -> None:
    with client(tmp_path, review_demo_analyses=included) as api:
        posted = api.post("/", data={"text": DEFERRED, "lang": "en"}, follow_redirects=False)
        assert posted.status_code == 303
        demo_id = posted.headers["location"].rsplit("/", 1)[1]
        from_api = api.post("/api/v1/analyses", json={"text": DEFERRED, "lang": "en"}).json()["id"]
        add_user(api, "mod")
        assert login(api, "mod").status_code == 303
        queued = {item.analysis_id for item in api.get("/review").context["items"]}  # type: ignore[attr-defined]
    assert from_api in queued  # analyses through the API are not the demo's
    assert (demo_id in queued) is included
