from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from web.app import create_app
from web.settings import Settings

from .conftest import FIXTURES


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(
        vocabularies=[FIXTURES / "vocab"], cache_dir=tmp_path_factory.mktemp("cache"), max_text_chars=200
    )
    with TestClient(create_app(settings)) as client:
        yield client


def test_demo_page_says_what_is_active(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.template.name == "demo.html"  # type: ignore[attr-defined]
    assert "vocabulary only (no LLM configured)" in response.text
    assert "languages: de, el, en, it, nl" in response.text
    assert response.headers["content-security-policy"].startswith("default-src 'self'")


def test_analysis_without_javascript_highlights_and_explains(client: TestClient) -> None:
    response = client.post("/", data={"text": "a half-caste child, a f@g", "lang": "en"})
    assert response.status_code == 200
    assert response.context["segments"][1][0] == "half-caste"  # type: ignore[attr-defined]
    assert '<a class="hit" href="#h1" id="ref-h1">half-caste</a>' in response.text
    assert "A colonial-era label for people of mixed parentage" in response.text
    assert "disguised spelling" in response.text


def test_user_text_is_escaped(client: TestClient) -> None:
    response = client.post("/", data={"text": "<script>alert(1)</script> <img src=x onerror=alert(2)> cripple"})
    assert "<script>alert(1)</script>" not in response.text and "&lt;script&gt;" in response.text
    assert "<img src=x" not in response.text


def test_errors_render_friendly_messages(client: TestClient) -> None:
    response = client.post("/", data={"text": "x" * 201, "lang": "en"})
    assert response.status_code == 413 and "at most 200 are accepted" in response.text
    response = client.post("/", data={"text": "hello", "lang": "xx"})
    assert response.status_code == 422 and "supported: de, el, en, it, nl" in response.text


def test_static_and_openapi(client: TestClient, tmp_path: Path) -> None:
    assert client.get("/static/style.css").status_code == 200
    assert client.get("/openapi.json").json()["info"]["title"] == "unerase"
