"""Widget sites in tests: one registered through the admin API, posts checked from its page, the app's routes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fastapi.testclient import TestClient

FORUM = "https://forum.example"
TOKEN = "test-admin-token"  # the admin token of the apps these helpers are used with
ADMIN = {"Authorization": f"Bearer {TOKEN}"}


def add_site(api: TestClient, name: str = "Forum", **fields: object) -> str:
    """A site whose page is FORUM; returns its key."""
    body = {"name": name, "allowed_origins": [FORUM], **fields}
    response = api.post("/api/v1/sites", json=body, headers=ADMIN)
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def check(api: TestClient, key: str, posts: list[dict[str, str]]) -> dict[str, dict[str, Any]]:
    """The widget's answers for English posts, by post id."""
    response = api.post(f"/api/v1/widget/{key}/check", json={"lang": "en", "posts": posts}, headers={"Origin": FORUM})
    assert response.status_code == 200, response.text
    return {r["id"]: r for r in response.json()["results"]}


def routes_under(api: TestClient, prefix: str) -> list[tuple[str, str]]:
    """(method, path with placeholders filled) of every route the app has under `prefix`, so a route added later
    is checked without anyone remembering to list it."""

    def walk(routes: list[Any], outer: str) -> Iterator[tuple[str, set[str]]]:
        for route in routes:
            included = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
            if included is not None:
                yield from walk(included.routes, outer + route.include_context.prefix)
            elif hasattr(route, "methods"):
                yield outer + route.path, route.methods

    found = []
    for path, methods in walk(api.app.routes, ""):  # type: ignore[attr-defined]
        if path.startswith(prefix):
            filled = path.replace("{analysis_id}", "0" * 32).replace("{key}", "nosuchsite")
            found += [(method, filled) for method in sorted(methods) if method != "HEAD"]
    return found
