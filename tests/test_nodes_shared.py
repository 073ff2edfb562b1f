"""Two real app processes (`python -m web`) on one PostgreSQL: what one node counts, caches or decides, the other
sees. The model is a SCRIPTED stand-in for an OpenAI-compatible server (tests/support/scripted_server.py), shared
by both nodes, which counts the questions it gets. Each test sends from an address of its own
(X-Forwarded-For, trusted here), so the module's tests share two nodes without sharing a limit."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx2 as httpx
import pytest
from sqlalchemy import create_engine

from web.auth import Accounts
from web.changes import POLL_SECONDS

from .postgres import database_url_or_skip, fresh_schema_url
from .support.app_process import AppProcess, app_processes
from .support.paths import FIXTURES
from .support.scripted_server import ScriptedModelServer, scripted_model_server
from .support.sites import FORUM, TOKEN, add_site
from .webapp import LEMMA_CACHE

pytestmark = pytest.mark.postgres

PASSWORD = "correct horse battery"
PER_MINUTE = 10
LOGIN_ATTEMPTS = 3
# a moderator's decision reaches the other node's widget at its next read of the change feed
WITHIN_SECONDS = 1.0


@dataclass
class Nodes:
    a: AppProcess
    b: AppProcess
    model: ScriptedModelServer
    database_url: str

    def user(self, name: str, role: str = "moderator") -> None:
        engine = create_engine(self.database_url)
        try:
            Accounts(engine).create(name, PASSWORD, role)
        finally:
            engine.dispose()


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    url = database_url_or_skip()
    with fresh_schema_url(url) as schema, scripted_model_server() as model:
        environment = model.environment(
            UNERASE_DATABASE_URL=schema.url,
            UNERASE_VOCABULARIES=json.dumps([str(FIXTURES / "vocab")]),
            UNERASE_CACHE_DIR=str(LEMMA_CACHE),
            UNERASE_RATE_LIMIT_PER_MINUTE=str(PER_MINUTE),
            UNERASE_LOGIN_ATTEMPTS=str(LOGIN_ATTEMPTS),
            UNERASE_TRUST_FORWARDED_FOR="true",
            UNERASE_ADMIN_TOKEN=TOKEN,
            UNERASE_SPOT_CHECK_PERCENT="0",
            UNERASE_WIDGET_WAIT_SECONDS="30",
        )
        with app_processes(tmp_path_factory.mktemp("nodes"), environment) as (a, b):
            yield Nodes(a, b, model, schema.url)


def login_form(client: httpx.Client) -> str:
    """The login page's double-submit token (its cookie stays in the client)."""
    page = client.get("/login")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert page.status_code == 200 and found, page.text[:500]
    return found.group(1)


def log_in(client: httpx.Client, name: str, password: str, address: str) -> httpx.Response:
    data = {"username": name, "password": password, "csrf": login_form(client), "next": "/"}
    return client.post("/login", data=data, headers={"X-Forwarded-For": address})


def test_one_clients_requests_over_both_nodes_meet_one_limit(nodes: Nodes) -> None:
    sent = {"X-Forwarded-For": "203.0.113.1"}
    answers = []
    with nodes.a.client() as a, nodes.b.client() as b:
        for number in range(PER_MINUTE + 2):
            node = (a, b)[number % 2]
            body = {"text": f"a friendly sentence number {number}", "lang": "en"}
            answers.append(node.post("/api/v1/analyses", json=body, headers=sent))
        other = a.post("/api/v1/analyses", json={"text": "hello", "lang": "en"}, headers={"X-Forwarded-For": "x"})
    assert [r.status_code for r in answers] == [201] * PER_MINUTE + [429, 429]
    refused = answers[-1]
    assert int(refused.headers["retry-after"]) >= 1
    assert f"at most {PER_MINUTE} per minute are accepted" in refused.json()["detail"]
    assert other.status_code == 201  # another client has its own budget


def test_failed_logins_on_both_nodes_count_together(nodes: Nodes) -> None:
    nodes.user("max")
    with nodes.a.client() as a, nodes.b.client() as b:
        failed = [log_in((a, b)[n % 2], "max", "wrong password!", "198.51.100.1") for n in range(LOGIN_ATTEMPTS)]
        held = log_in(b, "max", PASSWORD, "198.51.100.1")
        name_held = log_in(a, "max", PASSWORD, "198.51.100.2")  # the name, from another address
    assert [r.status_code for r in failed] == [400] * LOGIN_ATTEMPTS
    assert held.status_code == 429 and 0 < int(held.headers["retry-after"]) <= 15 * 60
    assert name_held.status_code == 429


def test_a_question_one_node_asked_is_not_asked_again_by_the_other(nodes: Nodes) -> None:
    text = "the strike left him crippled, said the shared-cache report"
    sent = {"X-Forwarded-For": "192.0.2.1"}
    with nodes.a.client() as a, nodes.b.client() as b:
        first = a.post("/api/v1/analyses", json={"text": text, "lang": "en"}, headers=sent)
        assert first.status_code == 201, first.text
        asked = {q: n for q, n in nodes.model.questions().items() if "shared-cache report" in q[1]}
        second = b.post("/api/v1/analyses", json={"text": text, "lang": "en"}, headers=sent)
        assert second.status_code == 201, second.text
    assert asked and set(asked.values()) == {1}  # the model was asked, once per question
    assert {q: n for q, n in nodes.model.questions().items() if "shared-cache report" in q[1]} == asked
    (asked_hit,) = [hit["verdict"] for hit in first.json()["hits"]]
    (cached_hit,) = [hit["verdict"] for hit in second.json()["hits"]]
    assert (asked_hit["status"], asked_hit["decided_by"]) == ("contentious", "openai:scripted-counting")
    assert cached_hit == {**asked_hit, "decided_by": "cache"}  # node B read node A's answer


def widget_document(client: httpx.Client, site: str, analysis_id: str) -> dict[str, Any]:
    response = client.get(f"/api/v1/widget/{site}/analyses/{analysis_id}", headers={"Origin": FORUM})
    assert response.status_code == 200, response.text
    document: dict[str, Any] = response.json()
    return document


def test_a_decision_on_one_node_reaches_the_other_nodes_widget_within_a_second(nodes: Nodes) -> None:
    nodes.user("mia")
    sent = {"X-Forwarded-For": "192.0.2.7"}
    with nodes.a.client() as a, nodes.b.client() as b:
        site = add_site(a)  # type: ignore[arg-type]  # an httpx client, as TestClient is one
        posts = [{"id": "p1", "text": "a faggot and a junkie"}]
        checked = a.post(f"/api/v1/widget/{site}/check", json={"lang": "en", "posts": posts}, headers={"Origin": FORUM})
        assert checked.status_code == 200, checked.text
        (result,) = checked.json()["results"]
        assert (result["label"], result["status"]) == ("flagged", "complete")
        before = widget_document(a, site, result["analysis_id"])  # node A now keeps it ready
        assert before["decision"]["label"] == "flagged" and before["decision"].get("decided_by") != "moderator"

        assert log_in(b, "mia", PASSWORD, "192.0.2.7").status_code == 303
        csrf = b.get("/api/v1/me").json()["csrf_token"]
        form = {"csrf": csrf, "action": "overturn", "label": "not_flagged"}
        decided = b.post(f"/review/{result['analysis_id']}", data=form, headers=sent)
        assert decided.status_code == 303, decided.text
        decided_at = time.monotonic()

        # bounded: A is asked until the decision shows or the time is up (a few reads a feed interval)
        seen = before
        while seen["decision"]["label"] != "not_flagged" and time.monotonic() - decided_at < WITHIN_SECONDS:
            time.sleep(POLL_SECONDS / 5)
            seen = widget_document(a, site, result["analysis_id"])
    assert seen["decision"]["label"] == "not_flagged" and seen["decision"]["decided_by"] == "moderator"
