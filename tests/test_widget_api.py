"""The widget's server side: batched checks, caching by content, CORS per site, feedback, sites, the script."""

from __future__ import annotations

import base64
import dataclasses
import gzip
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from engine.analysis import Analyzer, BackendRouter
from engine.detector import Detector
from engine.embeddings import LazyEmbedder
from engine.paths import shipped_vocabularies
from engine.sense_examples import ExampleSource, load_examples
from engine.use_model import LearnedUses, UseModel, shipped_use_model
from engine.vocabulary.loader import load_vocabulary
from web.cli import main as cli_main
from web.models import Site
from web.settings import get_settings
from web.widget import content_key

from .support.scripted_backend import ScriptedLLMBackend
from .support.sites import ADMIN, FORUM, TOKEN, add_site
from .webapp import client, sse_events

POSTS = [
    {"id": "p1", "text": "a faggot and a junkie"},
    {"id": "p2", "text": "a perfectly friendly sentence"},
    {"id": "p3", "text": "the strike left him crippled"},
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with client(tmp_path_factory.mktemp("widget"), admin_token=TOKEN) as test_client:
        yield test_client


def check(api: TestClient, key: str, posts: list[dict[str, str]], origin: str = FORUM) -> dict[str, object]:
    response = api.post(f"/api/v1/widget/{key}/check", json={"lang": "en", "posts": posts}, headers={"Origin": origin})
    assert response.status_code == 200, response.text
    assert response.headers["access-control-allow-origin"] == origin
    body: dict[str, object] = response.json()
    return body


def test_one_request_labels_every_post_and_a_second_reuses_the_results(api: TestClient) -> None:
    key = add_site(api, show_checked=True)
    first = check(api, key, POSTS)
    labels = {r["id"]: (r["label"], r["status"]) for r in first["results"]}  # type: ignore[attr-defined]
    assert labels == {
        "p1": ("flagged", "complete"),
        "p2": ("not_flagged", "complete"),
        "p3": ("needs_review", "complete"),  # ambiguous, and no model to decide it
    }
    assert first["site"] == {"show_checked": True}
    assert [r["button"] for r in first["results"]] == ["why", None, None]  # type: ignore[attr-defined]
    again = check(api, key, list(reversed(POSTS)))
    ids = {r["id"]: r["analysis_id"] for r in first["results"]}  # type: ignore[attr-defined]
    assert {r["id"]: r["analysis_id"] for r in again["results"]} == ids  # type: ignore[attr-defined]

    document = api.get(f"/api/v1/widget/{key}/analyses/{ids['p1']}", headers={"Origin": FORUM})
    assert document.headers["access-control-allow-origin"] == FORUM
    data = document.json()
    assert data["status"] == "complete" and data["text"] == POSTS[0]["text"]
    assert [h["term"] for h in data["hits"]] == ["faggot", "junkie"] and data["hits"][0]["suggested_terms"]
    events = api.get(f"/api/v1/widget/{key}/analyses/{ids['p1']}/events", headers={"Origin": FORUM})
    assert events.headers["access-control-allow-origin"] == FORUM
    assert [name for name, _ in sse_events(events.text)][-2:] == ["decision", "done"]


def test_each_post_is_read_in_its_own_language(api: TestClient) -> None:
    key = add_site(api)
    posts = [
        {"id": "g1", "text": "Πάλι μαζεύτηκαν εδώ οι γύφτοι της γειτονιάς και φωνάζουν όλη τη νύχτα."},
        {"id": "g2", "text": "άσε τους γυφτους", "lang": "el"},  # too short to detect: the post says its language
    ]
    results = check(api, key, posts)["results"]  # the page says English; the posts are Greek
    assert [r["label"] for r in results] == ["flagged", "flagged"]  # type: ignore[attr-defined]
    services = api.app.state.services  # type: ignore[attr-defined]
    stored = [services.store.analysis(r["analysis_id"]) for r in results]  # type: ignore[attr-defined]
    assert [record.language for record in stored] == ["el", "el"]


def test_origins_and_keys_are_checked_and_errors_are_readable_everywhere(api: TestClient) -> None:
    key = add_site(api)
    other = api.post(f"/api/v1/widget/{key}/check", json={"posts": POSTS}, headers={"Origin": "https://evil.example"})
    assert other.status_code == 403 and other.headers["access-control-allow-origin"] == "*"
    assert "https://evil.example is not allowed" in other.json()["detail"] and FORUM in other.json()["detail"]
    unknown = api.post("/api/v1/widget/nope/check", json={"posts": POSTS}, headers={"Origin": FORUM})
    assert unknown.status_code == 404 and "no site has the key 'nope'" in unknown.json()["detail"]
    preflight = api.options(
        f"/api/v1/widget/{key}/check",
        headers={
            "Origin": FORUM,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type",
        },
    )
    assert preflight.status_code == 204 and preflight.headers["access-control-allow-origin"] == FORUM
    assert "POST" in preflight.headers["access-control-allow-methods"]
    # a preflight from another origin is refused (tests/test_widget_hardening.py: the reason is read from …/site)
    other_preflight = api.options(f"/api/v1/widget/{key}/check", headers={"Origin": "https://evil.example"})
    assert other_preflight.status_code == 403 and "access-control-allow-origin" not in other_preflight.headers
    assert api.options("/api/v1/widget/nope/check", headers={"Origin": FORUM}).status_code == 404
    same_origin = api.post(
        f"/api/v1/widget/{key}/check", json={"posts": POSTS[:1]}, headers={"Origin": "http://testserver"}
    )
    assert same_origin.status_code == 200  # this server's own pages (the demo forum)
    too_many = api.post(f"/api/v1/widget/{key}/check", json={"posts": POSTS * 34}, headers={"Origin": FORUM})
    assert too_many.status_code == 413 and "between 1 and 100" in too_many.json()["detail"]


def test_feedback_is_stored_and_visible_to_admins(api: TestClient) -> None:
    key = add_site(api)
    analysis_id = check(api, key, POSTS[:1])["results"][0]["analysis_id"]  # type: ignore[index]
    for reader, helpful, comment in (
        ("first-reader-0001", True, None),
        ("other-reader-0002", False, "  it is a quote  "),
    ):
        response = api.post(
            f"/api/v1/widget/{key}/feedback",
            json={
                "analysis_id": analysis_id,
                "post_id": "p1",
                "helpful": helpful,
                "comment": comment,
                "reader": reader,
            },
            headers={"Origin": FORUM},
        )
        assert response.status_code == 201 and response.headers["access-control-allow-origin"] == FORUM
    missing = api.post(
        f"/api/v1/widget/{key}/feedback", json={"analysis_id": "x", "helpful": True}, headers={"Origin": FORUM}
    )
    assert missing.status_code == 404
    stored = api.get(f"/api/v1/sites/{key}/feedback", headers=ADMIN).json()
    assert [(f["helpful"], f["comment"], f["post_id"]) for f in stored] == [
        (False, "it is a quote", "p1"),
        (True, None, "p1"),
    ]
    assert api.get(f"/api/v1/sites/{key}/feedback").status_code == 401
    wrong = api.get(f"/api/v1/sites/{key}/feedback", headers={"Authorization": "Bearer wrong"})
    assert wrong.status_code == 401 and wrong.headers["www-authenticate"].startswith("Basic")


def test_site_settings_threshold_no_store_and_rate_limit(api: TestClient) -> None:
    strict = add_site(api, threshold=0.95)
    (result,) = check(api, strict, POSTS[:1])["results"]  # type: ignore[misc]
    assert result["label"] == "needs_review"  # confidence 0.9 is below this site's threshold
    private = add_site(api, store=False)
    (result,) = check(api, private, POSTS[:1])["results"]  # type: ignore[misc]
    services = api.app.state.services  # type: ignore[attr-defined]
    assert services.store.analysis(result["analysis_id"]) is None  # nothing written for a no-store site
    document = api.get(f"/api/v1/widget/{private}/analyses/{result['analysis_id']}", headers={"Origin": FORUM})
    assert document.json()["text"] == POSTS[0]["text"]
    limited = add_site(api, rate_limit_per_minute=2)
    statuses = [
        api.post(f"/api/v1/widget/{limited}/check", json={"posts": POSTS[:1]}, headers={"Origin": FORUM}).status_code
        for _ in range(3)
    ]
    assert statuses == [200, 200, 429]


def test_readers_get_about_this_word_on_mentions_and_nothing_on_undecided_posts_by_default(api: TestClient) -> None:
    posts = [
        {"id": "attack", "text": "a faggot and a junkie"},
        {"id": "mention", "text": 'They called my brother a "junkie" for years; please stop using that word.'},
        {"id": "undecided", "text": "the strike left him crippled"},
    ]
    default = add_site(api)
    results = {r["id"]: r for r in check(api, default, posts)["results"]}  # type: ignore[attr-defined]
    assert (results["attack"]["label"], results["attack"]["button"]) == ("flagged", "why")
    assert (results["mention"]["label"], results["mention"]["button"]) == ("not_flagged", "about")
    assert (results["undecided"]["label"], results["undecided"]["button"]) == ("needs_review", None)
    mention = results["mention"]["analysis_id"]
    document = api.get(f"/api/v1/widget/{default}/analyses/{mention}", headers={"Origin": FORUM})
    decision = document.json()["decision"]
    assert decision["uses"] == ["quoted"] and any("not held against the author" in r for r in decision["reasons"])
    assert document.json()["hits"][0]["use"] == "quoted" and document.json()["hits"][0]["verdict"]["use"] == "quoted"
    for display, button in (("review", "review"), ("about", "words")):
        key = add_site(api, show_undecided=display)
        results = {r["id"]: r for r in check(api, key, posts)["results"]}  # type: ignore[attr-defined]
        assert results["undecided"]["button"] == button and results["mention"]["button"] == "about"
    changed = api.patch(f"/api/v1/sites/{default}", json={"show_undecided": "review"}, headers=ADMIN)
    assert changed.status_code == 200 and changed.json()["show_undecided"] == "review"
    refused = api.patch(f"/api/v1/sites/{default}", json={"show_undecided": "always"}, headers=ADMIN)
    assert refused.status_code == 422 and "nothing" in refused.text and "review" in refused.text


def test_the_button_follows_the_label_the_mentions_and_the_sites_choice() -> None:
    from web.models import Site
    from web.shown import button

    for choice, undecided in (("nothing", None), ("about", "words"), ("review", "review")):
        site = Site(key="k", name="n", show_undecided=choice)
        assert button(site, "flagged", False) == button(site, "flagged", True) == "why"
        assert button(site, "not_flagged", False) is None and button(site, "not_flagged", True) == "about"
        assert button(site, "needs_review", False) == undecided
        # a post with a quoted slur and an undecided word: what the site chose, or else the quoted word's
        assert button(site, "needs_review", True) == (undecided or "about")


def test_admin_is_closed_without_a_token_and_forms_need_csrf(tmp_path: Path, api: TestClient) -> None:
    with client(tmp_path) as closed:
        response = closed.get("/api/v1/sites", headers=ADMIN)
        assert response.status_code == 403 and "UNERASE_ADMIN_TOKEN" in response.json()["detail"]
    basic = {"Authorization": "Basic " + base64.b64encode(f"admin:{TOKEN}".encode()).decode()}
    page = api.get("/admin/sites", headers=basic)
    assert page.status_code == 200 and 'name="csrf"' in page.text
    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    form = {"name": "Form site", "origins": "https://a.example\nhttps://b.example", "mode": "thorough"}
    assert api.post("/admin/sites", data={**form, "csrf": "forged"}, headers=basic).status_code == 403
    added = api.post("/admin/sites", data={**form, "csrf": csrf}, headers=basic, follow_redirects=False)
    assert added.status_code == 303
    sites = {s["name"]: s for s in api.get("/api/v1/sites", headers=ADMIN).json()}
    assert sites["Form site"]["allowed_origins"] == ["https://a.example", "https://b.example"]
    assert sites["Form site"]["mode"] == "thorough" and sites["Form site"]["store"] is False
    bad = api.post("/api/v1/sites", json={"name": "x", "allowed_origins": ["forum.example"]}, headers=ADMIN)
    assert bad.status_code == 400 and "scheme://host" in bad.json()["detail"]


def test_check_answers_before_a_slow_model_and_the_panel_streams_the_rest(tmp_path: Path) -> None:
    backend = ScriptedLLMBackend(delay=0.5)
    with client(tmp_path, BackendRouter(backend), admin_token=TOKEN, widget_wait_seconds=0.05) as api:
        key = add_site(api)
        results = check(api, key, POSTS)["results"]
        by_id = {r["id"]: r for r in results}  # type: ignore[attr-defined]
        assert by_id["p1"]["status"] == "running" and by_id["p1"]["label"] == "flagged"  # unambiguous term
        assert by_id["p3"]["label"] == "needs_review" and by_id["p2"]["label"] == "pending"
        stream = api.get(f"/api/v1/widget/{key}/analyses/{by_id['p3']['analysis_id']}/events")
        assert [name for name, _ in sse_events(stream.text)][-1] == "done"
        for _ in range(50):  # bounded: the others finish in the background
            again = {r["id"]: r for r in check(api, key, POSTS)["results"]}  # type: ignore[attr-defined]
            if all(r["status"] == "complete" for r in again.values()):
                break
            time.sleep(0.1)
        assert {r["analysis_id"] for r in again.values()} == {r["analysis_id"] for r in by_id.values()}
        calls = backend.started
        check(api, key, POSTS)
        assert backend.started == calls  # answered from stored results: no model call


def test_widget_script_is_served_compressed_and_cacheable(api: TestClient) -> None:
    plain = api.get("/widget.js", headers={"Accept-Encoding": "identity"})
    assert plain.status_code == 200 and plain.headers["content-type"].startswith("text/javascript")
    zipped = api.get("/widget.js", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip" and zipped.content == plain.content  # decoded by the client
    assert len(gzip.compress(plain.content, 9)) <= 12 * 1024
    etag = plain.headers["etag"]
    assert api.get("/widget.js", headers={"If-None-Match": etag}).status_code == 304
    assert plain.headers["cross-origin-resource-policy"] == "cross-origin"


@pytest.mark.parametrize(
    ("if_none_match", "status"),
    [
        ("W/{etag}", 304),  # a proxy weakened the tag
        ('"older", {etag}', 304),  # a cache holding several versions lists them all
        ('"older",W/{etag}', 304),
        ("*", 304),
        ('"older"', 200),
        ('W/"older", "other"', 200),
    ],
)
def test_widget_script_etags_weak_and_listed(api: TestClient, if_none_match: str, status: int) -> None:
    etag = api.get("/widget.js").headers["etag"]
    answer = api.get("/widget.js", headers={"If-None-Match": if_none_match.format(etag=etag)})
    assert answer.status_code == status


def test_demo_forum_embeds_the_widget(api: TestClient) -> None:
    page = api.get("/demo/forum")
    assert page.status_code == 200 and '<script src="/widget.js" data-site="demo" async></script>' in page.text
    thread = api.app.state.services.forum  # type: ignore[attr-defined]
    assert page.text.count("data-unerase ") == len(thread.posts) >= 10
    assert "style-src 'self' 'unsafe-inline'" in page.headers["content-security-policy"]
    assert "script-src 'self';" in page.headers["content-security-policy"]
    assert "<img src=x" not in page.text  # a post that pastes markup shows it as text


def test_site_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("UNERASE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        options = ["--name", "CLI forum", "--origin", "https://c.example/", "--no-store"]
        assert cli_main(["site", "add", *options, "--json"]) == 0
        out, err = capsys.readouterr()
        added = json.loads(out)  # the whole of stdout is one JSON object
        assert added["allowed_origins"] == ["https://c.example"] and added["store"] is False and err == ""
        assert cli_main(["site", "update", added["key"], "--threshold", "0.7", "--show-checked"]) == 0
        summary = capsys.readouterr().out.splitlines()
        assert summary[0] == "Updated the site “CLI forum”."
        assert f"  key:          {added['key']}" in summary and "  threshold:    0.7" in summary
        assert "  store texts:  no (kept in memory only)" in summary and "  checked mark: shown" in summary
        snippet = f'  <script src="https://YOUR-UNERASE-HOST/widget.js" data-site="{added["key"]}" async></script>'
        assert snippet in summary
        assert cli_main(["site", "list", "--json"]) == 0
        listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        mine = next(s for s in listed if s["key"] == added["key"])
        assert mine["threshold"] == 0.7 and mine["show_checked"] is True
        assert mine["show_undecided"] == "nothing"  # the default: readers see nothing on an undecided post
        assert cli_main(["site", "update", added["key"], "--show-undecided", "review"]) == 0
        assert "  undecided:    readers see “Under review”" in capsys.readouterr().out.splitlines()
        assert cli_main(["site", "update", added["key"], "--show-undecided", "about", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["show_undecided"] == "about"
        with pytest.raises(SystemExit):
            cli_main(["site", "update", added["key"], "--show-undecided", "always"])
        assert "invalid choice: 'always'" in capsys.readouterr().err
        assert cli_main(["site", "update", "nope", "--mode", "fast"]) == 2
        assert "no site has the key 'nope'" in capsys.readouterr().err
        # a person gets a readable summary by default, the snippet on a line of its own
        assert cli_main(["site", "add", "--name", "Riverside forum", "--origin", "https://r.example"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == "Added the site “Riverside forum”." and "  origins:      https://r.example" in lines
        assert "{" not in "".join(lines) and lines[-2].strip().startswith("<script src=")
    finally:
        get_settings.cache_clear()


def test_a_retrained_use_model_or_new_curated_examples_read_a_post_again() -> None:
    """A post's stored reading is found again by its content key; the key names the learned readers, so an upgrade
    that retrains the use model or changes the curated examples does not keep serving the old reading."""
    detector = Detector(load_vocabulary(shipped_vocabularies() / "en"))
    model = UseModel.load(shipped_use_model())
    assert model is not None
    embedder = LazyEmbedder()
    curated, vectors = load_examples()
    examples = ExampleSource(embedder, curated, vectors)
    site = Site(key="forum", name="Forum")
    text = 'He called me a "faggot" in the car park.'

    def key(use_model: UseModel | None, source: ExampleSource | None) -> str:
        uses = LearnedUses(embedder, use_model) if use_model is not None else None
        analyzer = Analyzer(detector, precedents=source, use_source=uses)
        return content_key(analyzer, site, text, "en")

    shipped = key(model, examples)
    assert key(model, ExampleSource(embedder, curated, vectors)) == shipped  # the same readers: found again
    retrained = dataclasses.replace(model, version=f"{model.version}-retrained")
    fewer = ExampleSource(embedder, curated[1:], vectors)
    assert len({shipped, key(retrained, examples), key(model, fewer), key(None, examples), key(model, None)}) == 5
