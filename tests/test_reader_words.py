"""What readers read on the demo pages (issue 16): each term once with its count, explanations per term with no
alternative said twice, confidence in words only where a model decided, and engine reasons in plain words.

The model is the scripted backend of tests/support (NOT a model): it answers every stage in the expected form.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from engine.analysis import BackendRouter
from engine.decision import decide
from engine.detector import Detector
from engine.events import Targeting, Verdict
from engine.explain import fresh_alternatives
from web.render import confidence_words, group_status, reader_reason, term_groups

from .support.scripted_backend import ScriptedLLMBackend
from .webapp import client, sse_events

REPEATED = " ".join(["They call her a welfare queen, and him a half-caste."] * 6)


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with client(tmp_path_factory.mktemp("reader-words")) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def with_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    backends = BackendRouter(ScriptedLLMBackend(model_id="scripted:reader"))
    with client(tmp_path_factory.mktemp("reader-words-model"), backends=backends, mode="thorough") as test_client:
        yield test_client


def main_of(page: str) -> str:
    """The page's main part, with the bidi isolates around curated and user words left out (tests/test_hardening.py
    and e2e/test_bidi.py test those); what is said is what these tests read."""
    main = page.split('<main id="main">', 1)[1].split("</main>", 1)[0]
    return main.replace("<bdi>", "").replace("</bdi>", "")


def permalink(web: TestClient, text: str) -> str:
    response = web.post("/", data={"text": text, "lang": "en"}, follow_redirects=False)
    assert response.status_code == 303, response.text
    return main_of(web.get(response.headers["location"]).text)


def test_an_alternative_the_suggestion_already_names_is_not_repeated() -> None:
    note = "Use the words people use for themselves, such as mixed race."
    assert fresh_alternatives(note, ["mixed race", "of mixed heritage", "Mixed Race"]) == ["of mixed heritage"]
    assert fresh_alternatives("Say gay man, or gay.", ["gay man"]) == []
    assert fresh_alternatives("", ["a", "b", "a"]) == ["a", "b"]


def test_the_vocabulary_explanation_says_each_alternative_once(web: TestClient) -> None:
    response = web.post("/api/v1/analyses", json={"text": "They called him a half-caste and a faggot.", "lang": "en"})
    explanation = response.json()["explanation"]["text"]
    assert explanation.count("mixed race") == 1, explanation
    assert "Instead, consider: of mixed heritage." in explanation
    # every alternative of "faggot" is in its note already: no "Instead, consider: gay man" after "Say gay man"
    assert explanation.count("gay man") == 1, explanation


def test_confidence_words_and_where_a_number_is_only_a_rule() -> None:
    assert [confidence_words(c) for c in (0.95, 0.9, 0.8, 0.7, 0.5, 0.2, 0.0)] == [
        "very sure",
        "very sure",
        "fairly sure",
        "not very sure",
        "not very sure",
        "unsure",
        "unsure",
    ]


def test_engine_reasons_in_readers_words(detector: Detector) -> None:
    hits = detector.detect("a faggot, a faggot and a crippled economy", "en").hits
    verdicts = {h.id: Verdict(h.id, "contentious", 0.9, "", "vocabulary") for h in hits if not h.ambiguous}
    skipped = Targeting("skipped", reason="vocabulary-only mode: no language model configured")
    flagged = decide(hits, verdicts, skipped, threshold=0.5)
    assert [reader_reason(r) for r in flagged.reasons] == ["2 uses of listed terms in an offensive sense"]
    parser = "the answer has none of the expected tags (<reasoning>, <verdict>)"
    undecided = decide(hits[2:], {}, Targeting("undetermined", reason=parser), threshold=0.5)
    said = [reader_reason(r) for r in undecided.reasons]
    assert said == [
        "1 term whose meaning here could not be decided; a moderator will look",
        "the check without the vocabulary could not decide; a moderator will look",
    ]
    assert not any("<" in reason or "expected tags" in reason for reason in said)
    assert reader_reason("deferred: confidence 0.40 < τ 0.60") == (
        "the automatic check was not sure enough; a moderator decides"
    )
    assert reader_reason("something new") == "something new"  # unknown reasons pass unchanged


def test_hits_of_one_term_are_one_group_with_a_count() -> None:
    def hit(hit_id: str, term: str, status: str | None) -> dict[str, object]:
        verdict = {"status": status} if status else None
        return {"id": hit_id, "term": term, "issue_id": term, "surface": term, "verdict": verdict}

    hits = [hit("h1", "a", "contentious"), hit("h2", "b", None), hit("h3", "a", "neutral"), hit("h4", "a", None)]
    groups = term_groups(hits)
    assert [(g["id"], g["count"]) for g in groups] == [("h1", 3), ("h2", 1)]
    assert group_status(groups[0]) == ("mixed", "1 offensive here, 1 neutral use here, 1 being checked")
    assert group_status(groups[1]) == ("pending", "checking the context…")
    quoted = [{**hit("h5", "c", "contentious"), "verdict": {"status": "contentious", "use": "quoted"}}] * 2
    assert group_status(term_groups(quoted)[0]) == ("contentious", "offensive here · quoted, not an attack")


def test_a_repeated_text_lists_and_explains_each_term_once(web: TestClient) -> None:
    page = permalink(web, REPEATED)
    assert page.count('class="hit') == 12  # every occurrence is still marked in the text
    assert "2 terms found (12 occurrences)" in page
    terms = page.split('<ul class="terms">', 1)[1].split("</ul>", 1)[0]
    assert terms.count("<li>") == 2 and terms.count("6 times") == 2
    assert page.count('<section class="term-card"') == 2
    assert page.count("· 6 times in the text") == 2
    for heading in ("What it is", "Why it hurts", "What instead", "Sources"):
        assert page.count(f"<dt>{heading}</dt>") == 2
    card = page.split('<section class="term-card"', 2)[2]
    assert card.count("mixed race") == 1 and "Also possible: of mixed heritage." in card
    assert "targets people because of their race and migration and colonial past" in card
    # vocabulary only: no confidence anywhere (the numbers are fixed per rule), no category ids
    assert "confiden" not in page and "%" not in page
    assert "migration-colonial-past" not in page
    assert "<h1>Analysis of a text</h1>" in page


def test_with_a_model_its_explanation_leads_and_its_confidence_is_in_words(with_model: TestClient) -> None:
    page = permalink(with_model, "She is nothing but a welfare queen.")
    fused = re.search(r'<p class="fused">([^<]*)</p>', page)
    assert fused and "used as an insult against a group of people" in fused[1], page
    assert page.index('class="fused"') < page.index('<section class="term-card"')
    card = page.split('<section class="term-card"', 1)[1]
    assert fused[1] not in card  # the model's one sentence is on top; its card does not say it again
    # the scripted answers have no log-probabilities: the engine's default confidence, 0.7, is used
    assert '<span class="confidence" title="confidence 70 %">not very sure' in page
    assert "(confidence 70 %)" in page  # read out after the words; the number is not the headline
    assert "70%" not in page and "confidence 70 %)" not in page.split('<span class="confidence"')[0]


def test_the_stream_carries_the_grouped_terms_and_their_shared_badge(web: TestClient) -> None:
    shell = web.post("/", data={"text": REPEATED, "lang": "en"}, headers={"HX-Request": "true"})
    events = sse_events(web.get(shell.headers["hx-push-url"] + "/stream").text)
    hits_html = next(html for name, html in events if name == "hit")
    assert hits_html.count('class="badge verdict pending" id="group-') == 2
    verdicts = [html for name, html in events if name == "verdict"]
    assert len(verdicts) == 12
    assert all('id="group-h' in html and 'hx-swap-oob="outerHTML"' in html for html in verdicts)
    assert "(12 checked)" in verdicts[-1] and "(11 of 12 checked)" in verdicts[-2]


def test_the_statement_wording_is_complete(web: TestClient) -> None:
    response = web.post("/api/v1/analyses", json={"text": "a half-caste child", "lang": "en"})
    page = main_of(web.get(f"/analyses/{response.json()['id']}/statement").text)
    contest = page.split('<ul id="contest">', 1)[1].split("</ul>", 1)[0]
    assert not re.search(r"<li>\s*Or\b", contest.split("</li>", 1)[0]), contest
    assert "race and migration and colonial past" not in page  # the statement lists, it does not join with "and"
    assert "race, migration and colonial past" in page
    # the term's explanation is the whole "Why" here: said once
    assert page.count("A colonial-era label for people of mixed parentage") == 1


def test_an_unreadable_model_answer_reads_as_a_plain_sentence(web: TestClient) -> None:
    macros = web.app.state.templates.env.get_template("_result.html").module  # type: ignore[attr-defined]
    parser = "the answer has none of the expected tags (<reasoning>, <verdict>)"
    verdict = {"status": "undetermined", "confidence": 0.0, "explanation": "", "decided_by": "openai:m"}
    verdict["reason"] = parser
    detail = str(macros.verdict_detail({"id": "h1", "verdict": verdict}))
    assert "The automatic check could not decide; a moderator will look." in detail
    assert "expected tags" not in detail and "confiden" not in detail
    targeting = str(macros.targeting({"status": "undetermined", "reason": parser, "confidence": 0.0}))
    assert "The automatic check could not decide; a moderator will look." in targeting and "expected" not in targeting
    error = str(macros.error_item({"stage": "targeting", "message": "openai:m gave no answer within 20 s"}))
    assert error == (
        '<li class="error">The check without the vocabulary failed. '
        "The automatic check could not decide; a moderator will look.</li>"
    )
    # a vocabulary's own reason is already in plain words and stays
    plain = {**verdict, "decided_by": "vocabulary", "reason": "an ambiguous term, and no language model is configured"}
    assert "no language model is configured" in str(macros.verdict_detail({"id": "h2", "verdict": plain}))
