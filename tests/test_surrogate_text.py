"""A lone UTF-16 surrogate in a JSON string (`"\\ud800"`) is refused when the request is checked, on every
endpoint that takes text, instead of failing when the text is stored (issue 14)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from .webapp import client

FORUM = "https://forum.example"
TOKEN = "test-admin-token"
LONE = '"x \\ud800 y"'  # JSON text: the escape of half a surrogate pair, alone
PAIR = '"a smile \\ud83d\\ude00"'  # both halves: one character, accepted


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with client(tmp_path_factory.mktemp("surrogates"), admin_token=TOKEN) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def site(api: TestClient) -> str:
    body = {"name": "Forum", "allowed_origins": [FORUM]}
    response = api.post("/api/v1/sites", json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def endpoints(site: str) -> dict[str, tuple[str, str, dict[str, str]]]:
    """Name -> (path, JSON body with TEXT where the text goes, extra headers)."""
    analysis = '{"text": TEXT, "lang": "en"}'
    return {
        "analyses": ("/api/v1/analyses", analysis, {}),
        "analyses-sse": ("/api/v1/analyses", analysis, {"Accept": "text/event-stream"}),
        "analyses-async": ("/api/v1/analyses", analysis, {"Prefer": "respond-async"}),
        "annotations": ("/api/v1/annotations", '{"texts": [{"id": "r1", "text": "fine"}, {"text": TEXT}]}', {}),
        "widget-check": (
            f"/api/v1/widget/{site}/check",
            '{"lang": "en", "posts": [{"id": "p1", "text": "fine"}, {"id": "p2", "text": TEXT}]}',
            {"Origin": FORUM},
        ),
    }


def post(api: TestClient, path: str, body: str, headers: dict[str, str]) -> tuple[int, str, dict[str, object]]:
    response = api.post(path, content=body.encode("ascii"), headers={"Content-Type": "application/json", **headers})
    problem = response.json() if "json" in response.headers.get("content-type", "") else {}
    return response.status_code, response.headers.get("content-type", ""), problem


@pytest.mark.parametrize("name", ["analyses", "analyses-sse", "analyses-async", "annotations", "widget-check"])
def test_a_lone_surrogate_is_refused_with_a_reason(api: TestClient, site: str, name: str) -> None:
    path, body, headers = endpoints(site)[name]
    status, content_type, problem = post(api, path, body.replace("TEXT", LONE), headers)
    assert status == 422 and content_type.startswith("application/problem+json"), (status, problem)
    detail = str(problem["detail"])
    where = {"annotations": "'texts.1.text'", "widget-check": "'posts.1.text'"}.get(name, "'text'")
    assert detail.startswith(f"{where}: holds a lone UTF-16 surrogate (U+D800) at character 2"), detail
    assert "send valid Unicode text" in detail


@pytest.mark.parametrize("name", ["analyses", "analyses-sse", "analyses-async", "annotations", "widget-check"])
def test_a_complete_surrogate_pair_is_one_character_and_accepted(api: TestClient, site: str, name: str) -> None:
    path, body, headers = endpoints(site)[name]
    status, _, problem = post(api, path, body.replace("TEXT", PAIR), headers)
    assert status in (200, 201, 202), (status, problem)


def test_other_strings_of_a_request_are_checked_too(api: TestClient, site: str) -> None:
    analysis_id = api.post("/api/v1/analyses", json={"text": "a fine text", "lang": "en"}).json()["id"]
    feedback = f'{{"analysis_id": "{analysis_id}", "helpful": false, "comment": "bad \\udfff"}}'
    status, _, problem = post(api, f"/api/v1/widget/{site}/feedback", feedback, {"Origin": FORUM})
    assert status == 422 and str(problem["detail"]).startswith("'comment': holds a lone UTF-16 surrogate (U+DFFF)")
    site_body = '{"name": "Forum \\ud800", "allowed_origins": ["https://other.example"]}'
    status, _, problem = post(api, "/api/v1/sites", site_body, {"Authorization": f"Bearer {TOKEN}"})
    assert status == 422 and str(problem["detail"]).startswith("'name': holds a lone UTF-16 surrogate")
