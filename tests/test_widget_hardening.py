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
from sqlmodel import Session, col, func, select

from web.models import AnalysisRecord, WidgetResult
from web.widget import Widget

from .webapp import client_on

FORUM = "https://forum.example"
TOKEN = "test-admin-token"
ADMIN = {"Authorization": f"Bearer {TOKEN}"}
READERS = 10


def add_site(api: TestClient, **fields: object) -> str:
    body = {"name": "Forum", "allowed_origins": [FORUM], **fields}
    response = api.post("/api/v1/sites", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


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
