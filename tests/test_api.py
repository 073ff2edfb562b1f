"""API v1 over HTTP: JSON results, the SSE event stream, background analyses, problem+json errors."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
from fastapi.testclient import TestClient

from engine.analysis import BackendRouter
from web.app import create_app

from .support.live_server import live_server
from .support.scripted_backend import ScriptedLLMBackend
from .webapp import client, settings, sse_events

PROBLEM = "application/problem+json"


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with client(tmp_path_factory.mktemp("api")) as test_client:
        yield test_client


def test_analysis_json_has_exact_spans_verdicts_and_decision(api: TestClient) -> None:
    text = "a faggot and a junkie"
    response = api.post("/api/v1/analyses", json={"text": text, "lang": "en"})
    assert response.status_code == 201
    document = response.json()
    assert response.headers["location"] == f"/api/v1/analyses/{document['id']}"
    assert document["status"] == "complete" and document["language"] == "en"
    assert [(h["surface"], text[h["start"] : h["end"]]) for h in document["hits"]] == [
        ("faggot", "faggot"),
        ("junkie", "junkie"),
    ]
    assert all(h["verdict"]["status"] == "contentious" for h in document["hits"])
    assert document["hits"][0]["suggested_terms"] and document["hits"][0]["description"]
    assert document["targeting"]["status"] == "skipped"
    assert document["decision"]["label"] == "flagged"
    assert document["explanation"]["faithfulness"] == "faithful"
    again = api.get(document["links"]["self"]).json()
    assert {k: v for k, v in again.items() if k != "elapsed_ms"} == {
        k: v for k, v in document.items() if k != "elapsed_ms"
    }


def test_event_stream_order_in_vocabulary_only_mode(api: TestClient) -> None:
    response = api.post(
        "/api/v1/analyses",
        json={"text": "a faggot and a junkie", "lang": "en"},
        headers={"Accept": "text/event-stream"},
    )
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
    names = [name for name, _ in sse_events(response.text)]
    assert names == ["analysis", "hit", "hit", "verdict", "verdict", "targeting", "explanation", "decision", "done"]
    first = json.loads(sse_events(response.text)[0][1])
    assert first["hit_count"] == 2 and first["models"] == ["none"]
    # the stored analysis replays the same stream, and a reconnect resumes after Last-Event-ID
    analysis_id = first["analysis_id"]
    replay = api.get(f"/api/v1/analyses/{analysis_id}/events")
    assert [name for name, _ in sse_events(replay.text)] == names
    resumed = api.get(f"/api/v1/analyses/{analysis_id}/events", headers={"Last-Event-ID": "5"})
    assert [name for name, _ in sse_events(resumed.text)] == names[6:]
    assert "id: 6\n" in resumed.text.replace("\r\n", "\n")


def test_event_stream_with_a_model_ends_with_done(tmp_path: Path) -> None:
    backend = ScriptedLLMBackend()
    with client(tmp_path, BackendRouter(backend)) as api:
        response = api.post(
            "/api/v1/analyses",
            json={"text": "a faggot and a crippled economy", "lang": "en"},
            headers={"Accept": "text/event-stream"},
        )
    names = [name for name, _ in sse_events(response.text)]
    assert names[:3] == ["analysis", "hit", "hit"]
    assert sorted(names[3:6]) == ["targeting", "verdict", "verdict"]
    assert names[6:] == ["explanation", "decision", "done"]
    assert sorted(backend.stages) == ["disambiguation", "fusion", "targeting"]


def test_a_failing_model_gives_errors_and_an_honest_decision(tmp_path: Path) -> None:
    backend = ScriptedLLMBackend(fail="the test server is down")
    with client(tmp_path, BackendRouter(backend)) as api:
        document = api.post("/api/v1/analyses", json={"text": "he is crippled", "lang": "en"}).json()
    assert {e["stage"] for e in document["errors"]} == {"disambiguation", "targeting"}
    assert document["hits"][0]["verdict"]["status"] == "undetermined"
    assert document["targeting"]["status"] == "undetermined"
    assert document["decision"]["label"] == "needs_review"


def test_respond_async_runs_in_the_background(tmp_path: Path) -> None:
    backend = ScriptedLLMBackend(delay=0.2)
    with client(tmp_path, BackendRouter(backend)) as api:
        response = api.post(
            "/api/v1/analyses", json={"text": "he is crippled", "lang": "en"}, headers={"Prefer": "respond-async"}
        )
        assert response.status_code == 202 and response.json()["status"] == "pending"
        url = response.json()["links"]["self"]
        for _ in range(100):  # bounded: 10 s
            document = api.get(url).json()
            if document["status"] == "complete":
                break
            time.sleep(0.1)
        assert document["status"] == "complete" and document["decision"] is not None
        assert backend.started == 2  # disambiguation and targeting, once each


def test_client_disconnect_cancels_pending_model_calls(tmp_path: Path) -> None:
    backend = ScriptedLLMBackend(delay=60.0)
    app = create_app(settings(tmp_path), backends=BackendRouter(backend))
    with live_server(app) as base, httpx.Client(base_url=base, timeout=10) as http:
        with http.stream(
            "POST",
            "/api/v1/analyses",
            json={"text": "a faggot and a crippled economy", "lang": "en", "mode": "thorough"},
            headers={"Accept": "text/event-stream"},
        ) as response:
            seen: list[str] = []
            for line in response.iter_lines():
                if line.startswith("event:"):
                    seen.append(line[6:].strip())
                if seen.count("hit") == 2:
                    for _ in range(100):  # bounded: 10 s for the three calls to reach the (slow) model
                        if backend.started == 3:
                            break
                        time.sleep(0.1)
                    break  # both hits are here and the model calls are pending: hang up
        analysis_id = response.headers["location"].rsplit("/", 1)[-1]
        for _ in range(100):  # bounded: 10 s
            if backend.started and backend.running == 0:
                break
            time.sleep(0.1)
        assert seen[0] == "analysis" and backend.started == 3  # two hits and the targeting call
        assert backend.cancelled == 3 and backend.finished == 0
        assert http.get(f"/api/v1/analyses/{analysis_id}").json()["status"] == "pending"


@pytest.mark.parametrize(
    ("method", "path", "kwargs", "status", "says"),
    [
        ("post", "/api/v1/analyses", {"json": {"text": "x" * 2001}}, 413, "at most 2,000 are accepted"),
        ("post", "/api/v1/analyses", {"json": {"lang": "en"}}, 422, "'text' is required"),
        ("post", "/api/v1/analyses", {"json": {"text": "   "}}, 422, "empty or only whitespace"),
        ("post", "/api/v1/analyses", {"json": {"text": "hi", "lang": "xx"}}, 422, "supported: de, el, en, it, nl"),
        ("post", "/api/v1/analyses", {"json": {"text": "hi", "mode": "slow"}}, 422, "'mode'"),
        (
            "post",
            "/api/v1/analyses",
            {"content": b"{not json", "headers": {"content-type": "application/json"}},
            422,
            "not valid JSON",
        ),
        ("get", "/api/v1/analyses/nope", {}, 404, "no analysis has the id 'nope'"),
        ("get", "/api/v1/analyses/nope/events", {}, 404, "no analysis has the id 'nope'"),
        ("delete", "/api/v1/analyses", {}, 405, "DELETE is not accepted"),
        ("get", "/api/v2/anything", {}, 404, "the API is described at /docs"),
        ("post", "/api/v1/annotations", {"json": {"texts": []}}, 413, "between 1 and 100 are accepted"),
        ("post", "/api/v1/annotations", {"json": {"texts": [{"text": "ok"}, {"text": ""}]}}, 422, "texts[1]:"),
        ("get", "/api/v1/batches/nope", {}, 404, "no batch job has the id 'nope'"),
    ],
)
def test_every_error_is_problem_json_with_a_useful_message(
    api: TestClient, method: str, path: str, kwargs: dict[str, object], status: int, says: str
) -> None:
    response = getattr(api, method)(path, **kwargs)
    assert response.status_code == status
    assert response.headers["content-type"] == PROBLEM
    problem = response.json()
    assert set(problem) == {"type", "title", "status", "detail"} and problem["status"] == status
    assert says in problem["detail"], problem["detail"]


def test_rate_limit_answers_429_with_retry_after(tmp_path: Path) -> None:
    with client(tmp_path, rate_limit_per_minute=3) as api:
        statuses = [api.post("/api/v1/analyses", json={"text": "a junkie", "lang": "en"}).status_code for _ in range(4)]
        limited = api.post("/api/v1/analyses", json={"text": "a junkie", "lang": "en"})
        assert api.get("/api/v1/analyses/nope").status_code == 404  # reading is not limited
    assert statuses == [201, 201, 201, 429]
    assert limited.headers["content-type"] == PROBLEM and int(limited.headers["retry-after"]) >= 1
    assert "at most 3 per minute" in limited.json()["detail"]


def test_openapi_documents_the_api(api: TestClient) -> None:
    schema = api.get("/openapi.json").json()
    paths = schema["paths"]
    for path in ("/api/v1/analyses", "/api/v1/analyses/{analysis_id}", "/api/v1/analyses/{analysis_id}/events",
                 "/api/v1/annotations", "/api/v1/batches", "/api/v1/batches/{job_id}"):  # fmt: skip
        assert path in paths, path
    assert "application/problem+json" in paths["/api/v1/analyses"]["post"]["responses"]["413"]["content"]
    assert "/" not in paths  # pages are not part of the API
