"""W3C Web Annotations: one per non-neutral hit, selected by quote and by position, with grounded bodies."""

from __future__ import annotations

from pathlib import Path

from engine.analysis import BackendRouter

from .support.scripted_backend import ScriptedLLMBackend, default_answer, stage_of
from .webapp import client


def test_annotation_page_selects_each_hit_by_quote_and_position(tmp_path: Path) -> None:
    texts = [
        {
            "id": "https://example.org/record/1",
            "text": "Photo: a half-caste child 😀 and a junkie on the steps.",
            "lang": "en",
        },
        {"text": "a perfectly friendly sentence", "lang": "en"},
    ]
    with client(tmp_path) as api:
        response = api.post("/api/v1/annotations", json={"texts": texts})
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/ld+json")
    page = response.json()
    assert page["type"] == "AnnotationPage" and "http://www.w3.org/ns/anno.jsonld" in page["@context"]
    assert page["partOf"]["total"] == len(page["items"]) == 2
    first, second = page["items"]
    text = texts[0]["text"]
    quote, position = first["target"]["selector"]
    assert first["type"] == "Annotation" and first["target"]["source"] == "https://example.org/record/1"
    assert first["unerase:use"] == second["unerase:use"] == "attack"
    assert quote == {"type": "TextQuoteSelector", "exact": "half-caste", "prefix": "Photo: a ", "suffix": text[19:51]}
    assert position == {"type": "TextPositionSelector", "start": 9, "end": 19}
    start, end = second["target"]["selector"][1]["start"], second["target"]["selector"][1]["end"]
    assert text[start:end] == "junkie" == second["target"]["selector"][0]["exact"]  # code points, after the emoji
    purposes = [body["purpose"] for body in first["body"]]
    assert purposes[0] == "describing" and "classifying" in purposes and "linking" in purposes
    describing = first["body"][0]
    assert describing["type"] == "TextualBody" and describing["language"] == "en" and describing["value"]
    assert {b["value"] for b in first["body"] if b["purpose"] == "classifying"} >= {"race"}
    assert all(b["source"].startswith("http") for b in first["body"] if b["purpose"] == "linking")


def test_neutral_uses_are_not_annotated(tmp_path: Path) -> None:
    def neutral(messages):  # type: ignore[no-untyped-def]
        if stage_of(messages) == "disambiguation":
            return (
                "<reasoning>It describes an injury.</reasoning><verdict>neutral</verdict>"
                "<explanation>Here the word describes an injury, not a person.</explanation>"
            )
        return default_answer(messages)

    with client(tmp_path, BackendRouter(ScriptedLLMBackend(neutral))) as api:
        page = api.post("/api/v1/annotations", json={"texts": [{"text": "he is crippled", "lang": "en"}]}).json()
    assert page["items"] == []
