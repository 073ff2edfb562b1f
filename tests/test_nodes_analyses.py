"""One analysis, several app processes sharing one database (issue 18): it runs once, every node streams the same
numbered events, a reconnect resumes exactly on another node, and a node killed mid-analysis leaves nothing pending.

Real `python -m web` processes (tests/support/app_process.py) on one PostgreSQL server (and, where a test says so,
one SQLite file), and a SCRIPTED stand-in for an OpenAI-compatible model server (tests/support/scripted_server.py),
NOT a model: it answers every request from a script, slowly when a test needs an analysis to be caught running,
and counts what it was asked.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .postgres import database_url_or_skip, fresh_schema_url
from .support.app_process import AppProcess, app_processes
from .support.scripted_server import ScriptedModelServer, scripted_model_server
from .support.sites import FORUM, TOKEN, add_site

LEASE_SECONDS = 3.0
WAIT_SECONDS = 120.0  # the longest any wait below lasts (a shared, loaded machine is slow)
QUESTIONS = 3  # what one analysis of `text_for` asks the scripted server
ANSWER_SECONDS = 0.6  # the scripted server's delay: an analysis takes a few seconds, long enough to be caught


@dataclass(frozen=True)
class Message:
    id: int
    event: str
    data: dict[str, Any]


def text_for(test: str) -> str:
    """An English text with two terms, unique per test, so no answer is cached from another test."""
    return f"A faggot and a junkie walked in ({test} {uuid.uuid4().hex[:8]})."


@contextmanager
def database(kind: str, tmp_path: Path) -> Iterator[str]:
    if kind == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"  # one file, several processes on one machine
        return
    with fresh_schema_url(database_url_or_skip()) as schema:
        yield schema.url


@contextmanager
def two_nodes(kind: str, tmp_path: Path, model: ScriptedModelServer) -> Iterator[list[AppProcess]]:
    with database(kind, tmp_path) as url:
        environment = model.environment(
            UNERASE_DATABASE_URL=url,
            UNERASE_MODE="thorough",
            UNERASE_LEASE_SECONDS=str(LEASE_SECONDS),
            UNERASE_RATE_LIMIT_PER_MINUTE="0",
            UNERASE_ADMIN_TOKEN=TOKEN,
            UNERASE_LLM_TIMEOUT="30",
        )
        with app_processes(tmp_path, environment) as nodes:
            yield nodes


def read_stream(
    node: AppProcess, path: str, last_event_id: int | None = None, stop_after: int | None = None
) -> list[Message]:
    """The SSE messages of `path` on `node` until `done` (or until `stop_after` messages, then hang up)."""
    headers = {"Accept": "text/event-stream"}
    if last_event_id is not None:
        headers["Last-Event-ID"] = str(last_event_id)
    messages: list[Message] = []
    fields: dict[str, str] = {}
    with node.client(timeout=WAIT_SECONDS) as client, client.stream("GET", path, headers=headers) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line:
                name, _, value = line.partition(":")
                fields[name] = value.removeprefix(" ")
                continue
            if "event" in fields:
                messages.append(Message(int(fields["id"]), fields["event"], json.loads(fields["data"])))
                if fields["event"] == "done" or (stop_after is not None and len(messages) >= stop_after):
                    break
            fields = {}
    return messages


def start_async(node: AppProcess, text: str) -> str:
    with node.client() as client:
        response = client.post(
            "/api/v1/analyses", json={"text": text, "lang": "en"}, headers={"Prefer": "respond-async"}
        )
    assert response.status_code == 202, response.text
    analysis_id: str = response.json()["id"]
    return analysis_id


def document(node: AppProcess, analysis_id: str) -> dict[str, Any]:
    with node.client() as client:
        response = client.get(f"/api/v1/analyses/{analysis_id}")
    assert response.status_code == 200, response.text
    found: dict[str, Any] = response.json()
    return found


def without_timing(messages: list[Message]) -> list[tuple[int, str, dict[str, Any]]]:
    """The messages as a client compares them: `done` carries the time the run took, which a replay keeps."""
    return [(m.id, m.event, m.data) for m in messages]


def assert_whole(messages: list[Message]) -> None:
    """Numbered 0, 1, 2... with no gap or repeat, each hit and verdict once, one `done`, last."""
    assert [m.id for m in messages] == list(range(len(messages)))
    assert [m.event for m in messages].count("done") == 1 and messages[-1].event == "done"
    hits = [m.data["id"] for m in messages if m.event == "hit"]
    verdicts = [m.data["hit_id"] for m in messages if m.event == "verdict"]
    assert len(hits) == len(set(hits)) == 2 and sorted(verdicts) == sorted(hits)
    assert messages[0].event == "analysis" and [m.event for m in messages].count("decision") == 1


@pytest.mark.parametrize("kind", [pytest.param("postgresql", marks=pytest.mark.postgres), "sqlite"])
def test_an_analysis_streamed_from_both_nodes_runs_once(kind: str, tmp_path: Path) -> None:
    with scripted_model_server(delay=ANSWER_SECONDS) as model, two_nodes(kind, tmp_path, model) as (a, b):
        analysis_id = start_async(a, text_for("both"))
        path = f"/api/v1/analyses/{analysis_id}/events"
        with ThreadPoolExecutor(2) as pool:
            from_a, from_b = pool.map(lambda node: read_stream(node, path), (a, b))
        assert_whole(from_a)
        assert without_timing(from_a) == without_timing(from_b)  # the same events with the same numbers
        asked = model.questions()
        # one analysis's questions: targeting and one per term (thorough mode); the scripted answers explain both
        # terms in the same words, so there is one explanation and nothing to fuse
        assert sorted(stage for stage, _ in asked) == ["disambiguation", "disambiguation", "targeting"]
        assert set(asked.values()) == {1} and model.calls == QUESTIONS
        assert document(b, analysis_id)["status"] == "complete"


@pytest.mark.postgres
def test_a_running_analysis_is_running_on_every_node(tmp_path: Path) -> None:
    with scripted_model_server(delay=ANSWER_SECONDS) as model, two_nodes("postgresql", tmp_path, model) as (a, b):
        analysis_id = start_async(a, text_for("running"))
        seen = set()
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:  # bounded: the analysis ends within seconds
            found = document(b, analysis_id)
            seen.add((found["status"], len(found["hits"])))
            if found["status"] == "complete":
                break
            time.sleep(0.05)
        statuses = {status for status, _ in seen}
        assert statuses >= {"running", "complete"} and "pending" not in statuses
        # the hits come before any model answer, and B reads them as A stored them, while A still runs it
        assert ("running", 2) in seen
        assert model.calls == QUESTIONS


@pytest.mark.parametrize("kind", [pytest.param("postgresql", marks=pytest.mark.postgres), "sqlite"])
@pytest.mark.parametrize("first", ["owner", "follower"])
def test_a_reconnect_on_the_other_node_resumes_exactly(kind: str, first: str, tmp_path: Path) -> None:
    with scripted_model_server(delay=ANSWER_SECONDS) as model, two_nodes(kind, tmp_path, model) as (a, b):
        analysis_id = start_async(a, text_for(f"resume-{first}"))
        path = f"/api/v1/analyses/{analysis_id}/events"
        reader, other = (a, b) if first == "owner" else (b, a)
        head = read_stream(reader, path, stop_after=4)  # analysis, two hits, and a first answer or a wait
        assert [m.id for m in head] == [0, 1, 2, 3]
        rest = read_stream(other, path, last_event_id=head[-1].id)
        whole = head + rest
        assert_whole(whole)
        replay = read_stream(b, path)  # the stored stream, read again from the start once complete
        assert without_timing(whole) == without_timing(replay)
        assert model.calls == QUESTIONS


@pytest.mark.postgres
def test_a_node_killed_mid_analysis_is_replaced_within_the_lease(tmp_path: Path) -> None:
    with scripted_model_server(delay=2.0) as model, two_nodes("postgresql", tmp_path, model) as (a, b):
        analysis_id = start_async(a, text_for("killed"))
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline and not document(b, analysis_id)["hits"]:  # bounded
            time.sleep(0.05)
        assert document(b, analysis_id)["status"] == "running"  # hits stored, model answers still to come
        a.kill()
        killed = time.monotonic()
        finish_by = killed + LEASE_SECONDS + 5.0
        while time.monotonic() < finish_by and document(b, analysis_id)["status"] != "complete":  # bounded
            time.sleep(0.1)
        found = document(b, analysis_id)
        assert found["status"] == "complete", (found["status"], b.output()[-3000:])
        messages = read_stream(b, f"/api/v1/analyses/{analysis_id}/events")
        assert_whole(messages)
        assert found["decision"]["label"] == "flagged"


@pytest.mark.postgres
def test_simultaneous_widget_checks_of_one_new_post_across_nodes_make_one_analysis(tmp_path: Path) -> None:
    readers = 10
    with scripted_model_server(delay=ANSWER_SECONDS) as model, two_nodes("postgresql", tmp_path, model) as nodes:
        with nodes[0].client() as client:
            key = add_site(client)  # type: ignore[arg-type]  # an httpx client, as TestClient is one
        post = {"lang": "en", "posts": [{"id": "p1", "text": text_for("widget")}]}

        def check(reader: int) -> tuple[int, str]:
            with nodes[reader % 2].client() as http:
                response = http.post(f"/api/v1/widget/{key}/check", json=post, headers={"Origin": FORUM})
            return response.status_code, response.text

        with ThreadPoolExecutor(readers) as pool:
            answers = list(pool.map(check, range(readers)))
        assert [status for status, _ in answers] == [200] * readers, answers
        ids = {result["analysis_id"] for _, body in answers for result in json.loads(body)["results"]}
        assert len(ids) == 1
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:  # bounded: until the analysis every reader was given is complete
            _, body = check(0)
            if json.loads(body)["results"][0]["status"] == "complete":
                break
            time.sleep(0.1)
        # every check that started an analysis had started it before answering: one analysis asked its questions
        assert model.calls == QUESTIONS and set(model.questions().values()) == {1}


@pytest.mark.postgres
def test_a_reader_of_a_killed_node_resumes_exactly_on_the_other(tmp_path: Path) -> None:
    """The events a reader saw from the node that died are numbered the same by the node that finishes the
    analysis: the stored ones are kept, and the rest (the hits, shown before they were stored) are produced alike."""
    with scripted_model_server(delay=2.0) as model, two_nodes("postgresql", tmp_path, model) as (a, b):
        analysis_id = start_async(a, text_for("reader-of-killed"))
        path = f"/api/v1/analyses/{analysis_id}/events"
        head = read_stream(a, path, stop_after=3)
        assert [m.event for m in head] == ["analysis", "hit", "hit"]
        a.kill()
        rest = read_stream(b, path, last_event_id=head[-1].id)  # waits while B takes the analysis over
        whole = head + rest
        assert_whole(whole)
        assert without_timing(whole) == without_timing(read_stream(b, path))
