"""The widget API under the conditions a busy forum and a hostile script create (issue 14): readers opening the
same new post at once, requests without an Origin, preflights from strangers, repeated votes, and a site's
posts asked for through the public API."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import inspect, text
from sqlmodel import Session, col, func, select

from web.db import make_engine
from web.models import AnalysisRecord, Feedback, Site, WidgetResult
from web.widget import Widget

from .postgres import database_url_or_skip, fresh_schema_url
from .support.sites import ADMIN, FORUM, TOKEN, add_site
from .webapp import client_on

READERS = 10


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def api(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    """The app on a SQLite file, and again on PostgreSQL (skipped where no server is configured)."""
    with client_on(request.param, tmp_path, admin_token=TOKEN) as test_client:
        yield test_client


@pytest.mark.parametrize("store", [True, False], ids=["stored", "memory-only"])
def test_readers_opening_one_new_post_at_once_share_one_analysis(
    api: TestClient, monkeypatch: pytest.MonkeyPatch, store: bool
) -> None:
    key = add_site(api, store=store)
    text = f"a brand new post nobody has checked, stored={store}: what a junkie"
    # Every request looks the post up before any of them has stored it: the interleaving a busy thread produces
    # by chance, made certain (the barrier gives up after a few seconds rather than hang a broken run).
    arrived = threading.Barrier(READERS)
    lookups = iter(range(READERS))  # the first lookup of each request waits; a reader's read-back does not
    looked_up = Widget._known

    def known_after_everyone_looked(self: Widget, site: object, keys: list[str]) -> dict[str, str]:
        found = looked_up(self, site, keys)  # type: ignore[arg-type]
        if next(lookups, None) is not None:
            with contextlib.suppress(threading.BrokenBarrierError):
                arrived.wait(timeout=5)
        return found

    monkeypatch.setattr(Widget, "_known", known_after_everyone_looked)
    starts: list[str] = []
    runs = api.app.state.services.runs  # type: ignore[attr-defined]
    started = runs.start

    def counted_start(analysis_id: str, *args: object, **kwargs: object) -> object:
        starts.append(analysis_id)
        return started(analysis_id, *args, **kwargs)

    monkeypatch.setattr(runs, "start", counted_start)

    def read(reader: int) -> tuple[int, str]:
        response = api.post(
            f"/api/v1/widget/{key}/check",
            json={"lang": "en", "posts": [{"id": f"p{reader}", "text": text}]},
            headers={"Origin": FORUM},
        )
        return response.status_code, response.text

    with ThreadPoolExecutor(READERS) as pool:
        answers = list(pool.map(read, range(READERS)))
    assert [status for status, _ in answers] == [200] * READERS, answers
    ids = {body.split('"analysis_id":"', 1)[1].split('"', 1)[0] for _, body in answers}
    assert len(ids) == 1, ids  # every reader is shown the same analysis
    assert len(starts) == 1 and starts[0] in ids  # analysed once
    engine = api.app.state.services.store.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        records = session.exec(select(func.count()).where(col(AnalysisRecord.text) == text)).one()
        results = session.exec(select(func.count()).where(col(WidgetResult.site_key) == key)).one()
    assert (records, results) == ((1, 1) if store else (0, 0))  # no orphan analysis left by the readers who lost


def first_analysis(api: TestClient, key: str, text: str = "what a junkie") -> str:
    response = api.post(
        f"/api/v1/widget/{key}/check", json={"posts": [{"id": "p1", "text": text}]}, headers={"Origin": FORUM}
    )
    assert response.status_code == 200, response.text
    analysis_id: str = response.json()["results"][0]["analysis_id"]
    return analysis_id


def test_posts_without_an_allowed_origin_spend_nothing(api: TestClient) -> None:
    key = add_site(api)
    analysis_id = first_analysis(api, key)
    services = api.app.state.services  # type: ignore[attr-defined]
    check = {"posts": [{"id": "p1", "text": "a post a script wants checked"}]}
    vote = {"analysis_id": analysis_id, "helpful": False}
    for path, body in ((f"/api/v1/widget/{key}/check", check), (f"/api/v1/widget/{key}/feedback", vote)):
        bare = api.post(path, json=body)  # a script with the public key, no page behind it
        assert bare.status_code == 403 and bare.headers["content-type"].startswith("application/problem+json")
        detail = bare.json()["detail"]
        assert bare.json()["type"] == "/problems/origin-required"
        assert "has no Origin header" in detail and f"allowed for site '{key}': {FORUM}" in detail, detail
        assert bare.headers["access-control-allow-origin"] == "*"  # readable wherever it is asked from
        stranger = api.post(path, json=body, headers={"Origin": "null"})
        assert stranger.status_code == 403 and "the origin null is not allowed" in stranger.json()["detail"]
    with Session(services.store.engine) as session:
        texts = session.exec(select(AnalysisRecord.text).where(col(AnalysisRecord.source) == "widget")).all()
    assert list(texts) == ["what a junkie"]  # the refused check analysed nothing
    assert api.get(f"/api/v1/sites/{key}/feedback", headers=ADMIN).json() == []  # the refused vote was not stored
    # reading an analysis the site's check handed out needs no Origin: a browser sends none on its own pages'
    # GETs, it costs no model call, and the id is known only to readers of the site
    document = api.get(f"/api/v1/widget/{key}/analyses/{analysis_id}")
    assert document.status_code == 200 and document.json()["text"] == "what a junkie"
    assert api.get(f"/api/v1/widget/{key}/analyses/{analysis_id}/events").status_code == 200
    refused = api.get(f"/api/v1/widget/{key}/analyses/{analysis_id}", headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403


def test_preflights_are_answered_for_the_sites_origins_only(api: TestClient) -> None:
    key = add_site(api)
    ask = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
    allowed = api.options(f"/api/v1/widget/{key}/check", headers={"Origin": FORUM, **ask})
    assert allowed.status_code == 204 and allowed.headers["access-control-allow-origin"] == FORUM
    assert "POST" in allowed.headers["access-control-allow-methods"]
    for origin in ("https://evil.example", "null", None):
        headers = ask if origin is None else {"Origin": origin, **ask}
        refused = api.options(f"/api/v1/widget/{key}/check", headers=headers)
        assert refused.status_code == 403, (origin, refused.text)
        assert not [name for name in refused.headers if name.startswith("access-control-")], refused.headers
    # the reason stays readable to the widget on a refused page: a plain GET needs no preflight
    site = api.get(f"/api/v1/widget/{key}/site", headers={"Origin": "https://evil.example"})
    assert site.status_code == 403 and site.headers["access-control-allow-origin"] == "*"
    assert f"the origin https://evil.example is not allowed for site '{key}'" in site.json()["detail"]
    mine = api.get(f"/api/v1/widget/{key}/site", headers={"Origin": FORUM})
    assert mine.status_code == 200 and mine.headers["access-control-allow-origin"] == FORUM
    assert mine.json() == {"site": {"show_checked": False}}


@pytest.mark.parametrize("store", [True, False], ids=["stored", "memory-only"])
def test_a_sites_posts_are_served_by_its_widget_only(api: TestClient, store: bool) -> None:
    key, other = add_site(api, store=store), add_site(api)
    analysis_id = first_analysis(api, key, f"a post of the site, stored={store}, what a junkie")
    mine = api.get(f"/api/v1/widget/{key}/analyses/{analysis_id}", headers={"Origin": FORUM})
    assert mine.status_code == 200 and mine.json()["id"] == analysis_id
    events = api.get(f"/api/v1/widget/{key}/analyses/{analysis_id}/events", headers={"Origin": FORUM})
    assert events.status_code == 200 and "event: done" in events.text
    not_found = f"no analysis has the id '{analysis_id}'"
    # not through the public API or the public pages ...
    for path in (f"/api/v1/analyses/{analysis_id}", f"/api/v1/analyses/{analysis_id}/events"):
        hidden = api.get(path)
        assert hidden.status_code == 404 and hidden.json()["detail"].startswith(not_found), (path, hidden.text)
    for path in (f"/analyses/{analysis_id}", f"/analyses/{analysis_id}/stream"):
        assert api.get(path, headers={"Accept": "text/html"}).status_code == 404, path
    # ... nor through another site's widget (its key is as public as this one's), nor voted on there
    for path in (
        f"/api/v1/widget/{other}/analyses/{analysis_id}",
        f"/api/v1/widget/{other}/analyses/{analysis_id}/events",
    ):
        hidden = api.get(path, headers={"Origin": FORUM})
        assert hidden.status_code == 404 and hidden.json()["detail"].startswith(not_found), (path, hidden.text)
    vote = {"analysis_id": analysis_id, "helpful": False}
    assert api.post(f"/api/v1/widget/{other}/feedback", json=vote, headers={"Origin": FORUM}).status_code == 404
    assert api.post(f"/api/v1/widget/{key}/feedback", json=vote, headers={"Origin": FORUM}).status_code == 201
    # an analysis made through the public API stays public, and is not a site's to serve
    public = api.post("/api/v1/analyses", json={"text": "a public junkie", "lang": "en"}).json()["id"]
    assert api.get(f"/api/v1/analyses/{public}").status_code == 200
    assert api.get(f"/api/v1/widget/{key}/analyses/{public}", headers={"Origin": FORUM}).status_code == 404
    if store:  # the person whose post it is can still read the statement of reasons, which links to no public page
        assert api.get(f"/analyses/{analysis_id}/statement", headers={"Accept": "application/json"}).status_code == 200
        page = api.get(f"/analyses/{analysis_id}/statement", headers={"Accept": "text/html"})
        assert page.status_code == 200 and "Why your text was labelled this way" in page.text
        assert f'href="/analyses/{analysis_id}"' not in page.text
        public_page = api.get(f"/analyses/{public}/statement", headers={"Accept": "text/html"}).text
        assert f'href="/analyses/{public}"' in public_page


def test_one_reader_votes_once_per_analysis(api: TestClient) -> None:
    key = add_site(api, rate_limit_per_minute=1_000)  # the site's limit per client would stop a script at 120
    analysis_id = first_analysis(api, key)
    other_id = first_analysis(api, key, "another junkie post")
    url = f"/api/v1/widget/{key}/feedback"

    def vote(analysis: str, helpful: bool, reader: str | None, comment: str | None = None) -> int:
        body = {"analysis_id": analysis, "post_id": "p1", "helpful": helpful, "comment": comment}
        if reader is not None:
            body["reader"] = reader
        response = api.post(url, json=body, headers={"Origin": FORUM})
        assert response.status_code in (200, 201), response.text
        return response.status_code

    statuses = [vote(analysis_id, False, "reader-token-0001") for _ in range(400)]
    assert statuses == [201] + [200] * 399  # the first vote is stored, each repeat answers "already counted"
    assert vote(analysis_id, True, "reader-token-0001") == 200  # a change of mind replaces the vote
    assert vote(analysis_id, False, "reader-token-0002", "he quotes it") == 201  # another reader
    assert vote(other_id, False, "reader-token-0001") == 201  # the same reader on another post
    # without a token (storage blocked) the reader is the client's address
    assert [vote(analysis_id, False, None) for _ in range(5)] == [201, 200, 200, 200, 200]
    stored = api.get(f"/api/v1/sites/{key}/feedback", headers=ADMIN).json()
    mine = sorted((f["helpful"], f["comment"] or "") for f in stored if f["analysis_id"] == analysis_id)
    assert mine == [(False, ""), (False, "he quotes it"), (True, "")]
    assert len(stored) == 4
    # stored as keyed hashes: neither the token nor the address is in the table
    engine = api.app.state.services.store.engine  # type: ignore[attr-defined]
    with Session(engine) as session:
        readers = session.exec(select(Feedback.reader).where(col(Feedback.site_key) == key)).all()
    assert len(set(readers)) == 4 and all(r and len(r) == 64 for r in readers)
    assert not any("reader-token" in r or "testclient" in r for r in readers if r)
    too_long = {"analysis_id": analysis_id, "helpful": True, "reader": "x" * 201}
    bad = api.post(url, json=too_long, headers={"Origin": FORUM})
    assert bad.status_code == 422 and "'reader'" in bad.json()["detail"]


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_a_database_with_votes_from_before_gets_the_reader_column_and_index(tmp_path: Path, database: str) -> None:
    def upgrade(url: str) -> None:
        engine = make_engine(url)
        with Session(engine) as session:
            session.add(Site(key="old", name="Old"))
            session.commit()
        with engine.begin() as connection:  # the feedback table as it was, with one reader's two votes
            connection.execute(text("DROP INDEX uq_feedback_reader"))
            connection.execute(text("ALTER TABLE feedback DROP COLUMN reader"))
            for _ in range(2):
                connection.execute(text("INSERT INTO feedback (site_key, analysis_id, post_id, helpful, created_at) "
                                        "VALUES ('old', 'a1', 'p1', FALSE, CURRENT_TIMESTAMP)"))  # fmt: skip
        engine.dispose()
        engine = make_engine(url)  # what starting the new version does
        try:
            assert "uq_feedback_reader" in {index["name"] for index in inspect(engine).get_indexes("feedback")}
            with Session(engine) as session:
                rows = session.exec(select(Feedback).where(col(Feedback.site_key) == "old")).all()
            assert [(row.analysis_id, row.reader) for row in rows] == [("a1", None), ("a1", None)]
        finally:
            engine.dispose()

    if database == "sqlite":
        upgrade(f"sqlite:///{tmp_path / 'old.db'}")
        return
    with fresh_schema_url(database_url_or_skip()) as schema:
        upgrade(schema.url)
