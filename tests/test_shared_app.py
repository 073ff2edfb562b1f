"""Two apps on one SQLite file with `workers` = 2 (as two uvicorn workers of one machine), in this process: the
limits are counted once for both, and what one changes the other forgets when it reads the change feed (read
here by hand, so nothing waits for the feed's timer)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from web import changes
from web.services import Services
from web.shared_limits import DatabaseBuckets

from .support.accounts import add_user, login, session_csrf
from .support.review import act
from .support.sites import ADMIN, FORUM, TOKEN, add_site, check
from .webapp import client


@pytest.fixture
def workers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestClient, TestClient]]:
    monkeypatch.setattr(changes, "POLL_SECONDS", 3600.0)  # the tests read the feed themselves
    with ExitStack() as stack:
        first, second = (
            stack.enter_context(client(tmp_path, workers=2, rate_limit_per_minute=3, admin_token=TOKEN))
            for _ in range(2)
        )
        yield first, second


def services_of(api: TestClient) -> Services:
    services: Services = api.app.state.services  # type: ignore[attr-defined]
    return services


def read_feed(api: TestClient) -> None:
    feed = services_of(api).changes
    assert feed is not None
    feed.dispatch(feed.read())


def test_two_workers_share_the_limit_of_the_public_endpoints(workers: tuple[TestClient, TestClient]) -> None:
    assert isinstance(services_of(workers[0]).limiter.buckets, DatabaseBuckets)
    statuses = [
        workers[n % 2].post("/api/v1/analyses", json={"text": "a friendly sentence", "lang": "en"}).status_code
        for n in range(5)
    ]
    assert statuses == [201, 201, 201, 429, 429]


def test_two_workers_share_a_sites_limit_per_client(workers: tuple[TestClient, TestClient]) -> None:
    key = add_site(workers[0], rate_limit_per_minute=2)
    posts = {"posts": [{"id": "p1", "text": "a friendly sentence"}]}
    statuses = [
        workers[n % 2].post(f"/api/v1/widget/{key}/check", json=posts, headers={"Origin": FORUM}).status_code
        for n in range(3)
    ]
    assert statuses == [200, 200, 429]


def test_a_site_changed_by_one_worker_is_forgotten_by_the_other(workers: tuple[TestClient, TestClient]) -> None:
    first, second = workers
    key = add_site(first)
    read_feed(first)  # the site's creation
    (result,) = check(first, key, [{"id": "p1", "text": "a faggot and a junkie"}]).values()
    document = first.get(f"/api/v1/widget/{key}/analyses/{result['analysis_id']}", headers={"Origin": FORUM})
    assert document.status_code == 200 and document.json()["decision"]["label"] == "flagged"
    kept = services_of(first)
    assert kept.sites.cached(key)[0] and result["analysis_id"] in kept.widget.documents

    changed = second.patch(f"/api/v1/sites/{key}", json={"threshold": 0.99}, headers=ADMIN)
    assert changed.status_code == 200, changed.text
    read_feed(first)
    assert kept.sites.cached(key) == (False, None)
    assert result["analysis_id"] not in kept.widget.documents
    again = first.get(f"/api/v1/widget/{key}/analyses/{result['analysis_id']}", headers={"Origin": FORUM})
    assert again.json()["decision"]["label"] == "needs_review"  # the new threshold, at once


def test_a_decision_and_its_undo_in_one_worker_reach_the_others_widget(workers: tuple[TestClient, TestClient]) -> None:
    first, second = workers
    key = add_site(first)
    read_feed(first)
    (result,) = check(first, key, [{"id": "p1", "text": "a faggot and a junkie"}]).values()
    analysis_id, kept = result["analysis_id"], services_of(first)
    path = f"/api/v1/widget/{key}/analyses/{analysis_id}"

    def label() -> str:
        shown: str = first.get(path, headers={"Origin": FORUM}).json()["decision"]["label"]
        return shown

    assert label() == "flagged" and analysis_id in kept.widget.documents
    add_user(second, "mia")
    assert login(second, "mia").status_code == 303
    assert act(second, analysis_id, action="overturn", label="not_flagged").status_code == 303
    assert label() == "flagged"  # the first worker has not read the feed yet: its ready document stands
    read_feed(first)
    assert label() == "not_flagged"
    undo = {"csrf": session_csrf(second), "sequence": "1"}
    assert second.post(f"/review/{analysis_id}/undo", data=undo, follow_redirects=False).status_code == 303
    read_feed(first)
    assert label() == "flagged"
