"""The reader-facing pages in seven languages (web/i18n.py, web/locales/*.yaml, docs/i18n.md).

The language comes from a `lang` query parameter (remembered in a cookie), that cookie, or Accept-Language; English
otherwise. The catalogue is checked for completeness and placeholders, and its words shared with the widget are
checked against the widget's own table, read by running the widget script in node.
"""

from __future__ import annotations

import json
import string
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from markupsafe import escape

from web.i18n import COOKIE, LANGUAGES, LOCALES, catalogue, choose, negotiate
from web.language_names import LANGUAGE_NAMES

from .support.node import SCRIPT, node_or_skip
from .webapp import client

FLAGGED = "a faggot and a junkie"
HTML = {"Accept": "text/html"}


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    with client(tmp_path_factory.mktemp("i18n")) as test_client:
        yield test_client


@pytest.fixture(scope="module")
def analysis_id(api: TestClient) -> str:
    response = api.post("/api/v1/analyses", json={"text": FLAGGED, "lang": "en"})
    assert response.status_code == 201, response.text
    value: str = response.json()["id"]
    return value


def said(lang: str, key: str, **params: object) -> str:
    """The catalogue's words as they appear in a page (escaped)."""
    words = catalogue(lang)[key]
    return str(escape(words.format(**params) if params else words))


# --- negotiation -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("fr", "fr"),
        ("fr-CA", "fr"),
        ("FR-ca,en;q=0.1", "fr"),
        ("de;q=0.5,fr;q=0.9", "fr"),
        ("ja, de;q=0.3", "de"),
        ("pt-BR,pt;q=0.9,en;q=0.8", "pt"),
        ("en-GB", "en"),
        ("el-GR;q=1.0", "el"),
        ("ja, zh-Hant", None),
        ("*", None),
        ("", None),
        (None, None),
        ("fr;q=0", None),  # q=0 means "not this one"
        ("fr;q=abc, it", "it"),  # a malformed entry is skipped, the rest still counts
        (";;;,,,q=,-", None),
        ("nl;level=1", None),
        ("x" * 5000, None),
    ],
)
def test_accept_language_negotiation(header: str | None, expected: str | None) -> None:
    assert negotiate(header) == expected


def test_the_query_wins_over_the_cookie_which_wins_over_the_header() -> None:
    assert choose("/", "lang=de", f"{COOKIE}=it", "fr") == ("de", "de")
    assert choose("/", "", f"{COOKIE}=it", "fr") == ("it", None)
    assert choose("/", "lang=xx", f"{COOKIE}=zz", "fr-CA") == ("fr", None)  # unknown choices are ignored
    assert choose("/", "", 'bad"cookie', "nl") == ("nl", None)
    # moderator, batch and admin pages are English only, whatever was asked
    assert choose("/review", "lang=fr", f"{COOKIE}=fr", "fr") == ("en", None)


# --- the catalogue ---------------------------------------------------------------------------------------------------


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_every_language_has_exactly_the_english_keys_and_the_same_placeholders() -> None:
    assert sorted(p.stem for p in LOCALES.glob("*.yaml")) == sorted(LANGUAGES)
    english = catalogue("en")
    for lang in LANGUAGES:
        raw = yaml.safe_load((LOCALES / f"{lang}.yaml").read_text(encoding="utf-8"))
        assert set(raw) == set(english), f"{lang}: missing {set(english) - set(raw)}, extra {set(raw) - set(english)}"
        for key, text in raw.items():
            assert isinstance(text, str) and text.strip(), f"{lang}: {key} is empty"
            assert placeholders(text) == placeholders(english[key]), f"{lang}: {key} has other placeholders"


def widget_texts() -> dict[str, dict[str, object]]:
    node = node_or_skip()
    script = f"process.stdout.write(JSON.stringify(require({json.dumps(str(SCRIPT))}).TEXTS))"
    out = subprocess.run([node, "-e", script], capture_output=True, text=True, check=True, timeout=30).stdout
    texts: dict[str, dict[str, object]] = json.loads(out)
    return texts


def test_words_shared_with_the_widget_are_the_widgets_words() -> None:
    texts = widget_texts()
    assert sorted(texts) == sorted(LANGUAGES)
    cats = (
        "gender sexual-orientation race ethnicity religion political-affiliation socioeconomic-status occupation age "
        "disability addiction physical-appearance migration-colonial-past other"
    ).split()
    # the widget's lists, in its order -> (our key prefix, the ids)
    lists = {
        "labels": ("label", ["flagged", "not_flagged", "needs_review"]),
        "sevs": ("sev", ["none", "slight", "moderate", "high"]),
        "cats": ("cat", cats),
        "sure": ("confidence", ["very", "fairly", "not_very", "unsure"]),
    }
    singles = ("close", "sources", "explanation", "decision", "targets")
    for lang in LANGUAGES:
        ours, theirs = catalogue(lang), texts[lang]
        for key in singles:
            assert ours[key] == theirs[key], f"{lang}: {key}"
        for name, (prefix, ids) in lists.items():
            words = theirs[name]
            assert isinstance(words, list) and len(words) == len(ids), f"{lang}: {name}"
            for position, ident in enumerate(ids):
                assert ours[f"{prefix}.{ident}"] == words[position], f"{lang}: {name} {ident}"


# --- pages -----------------------------------------------------------------------------------------------------------


def test_a_french_browser_gets_the_demo_in_french(api: TestClient) -> None:
    page = api.get("/", headers={**HTML, "Accept-Language": "fr-CA,fr;q=0.9,en;q=0.5"})
    assert page.status_code == 200
    assert '<html lang="fr">' in page.text
    assert said("fr", "demo.h1") in page.text and said("fr", "demo.analyse") in page.text
    assert "Why would this text hurt someone?" not in page.text
    assert "Accept-Language" in page.headers["vary"] and "Cookie" in page.headers["vary"]
    # the switcher: every language named in itself, the current one marked
    for lang in LANGUAGES:
        assert f'hreflang="{lang}"' in page.text and f">{LANGUAGE_NAMES[lang]}</a>" in page.text
    assert 'href="?lang=fr" lang="fr" hreflang="fr" aria-current="true"' in page.text


@pytest.mark.parametrize("header", [None, "ja", "zz;q=;;, ,", "*;q=0.5"])
def test_no_usable_language_gives_english(api: TestClient, header: str | None) -> None:
    headers = {**HTML, **({"Accept-Language": header} if header is not None else {})}
    page = api.get("/", headers=headers)
    assert page.status_code == 200 and '<html lang="en">' in page.text
    assert "Why would this text hurt someone?" in page.text


def test_the_switcher_choice_is_remembered_and_wins(tmp_path: Path) -> None:
    with client(tmp_path) as fresh:
        chosen = fresh.get("/?lang=de", headers={**HTML, "Accept-Language": "fr"})
        assert '<html lang="de">' in chosen.text and said("de", "demo.h1") in chosen.text
        cookie = chosen.headers["set-cookie"]
        assert cookie.startswith(f"{COOKIE}=de;") and "Path=/" in cookie and "SameSite=Lax" in cookie
        later = fresh.get("/", headers={**HTML, "Accept-Language": "fr"})  # the cookie travels with the client
        assert '<html lang="de">' in later.text and "set-cookie" not in later.headers
        again = fresh.get("/?lang=it", headers=HTML)
        assert '<html lang="it">' in again.text
        nonsense = fresh.get("/?lang=klingon", headers=HTML)
        assert nonsense.status_code == 200 and '<html lang="it">' in nonsense.text
        example = fresh.get("/?example=1&lang=pt", headers=HTML)
        assert 'href="?example=1&amp;lang=de"' in example.text  # the page's other parameters are kept


def test_the_text_language_field_of_the_demo_form_is_not_the_page_language(api: TestClient) -> None:
    # the form posts `lang` (the text's language) in its body; the page keeps the reader's language
    page = api.post("/", data={"text": FLAGGED, "lang": "en"}, headers={**HTML, "Accept-Language": "nl"})
    assert page.status_code == 200 and '<html lang="nl">' in page.text
    assert said("nl", "analysis.h1") in page.text


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_streamed_result_fragment_is_in_the_readers_language(api: TestClient, lang: str) -> None:
    headers = {"HX-Request": "true", "Accept-Language": lang}
    fragment = api.post("/", data={"text": FLAGGED, "lang": "en"}, headers=headers)
    assert fragment.status_code == 200, fragment.text
    assert said(lang, "result.title") in fragment.text and said(lang, "stage.terms") in fragment.text
    # demo.js fills the elapsed time into the page's own words: their placeholders reach the browser intact
    assert f'data-words="{said(lang, "result.elapsed")}"' in fragment.text and "{seconds}" in fragment.text
    form = api.get("/", headers={"Accept-Language": lang}).text
    assert f'data-analysing="{said(lang, "result.analysing")}"' in form


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_reader_page_renders_in_every_language(api: TestClient, analysis_id: str, lang: str) -> None:
    headers = {**HTML, "Accept-Language": lang}
    demo = api.get("/", headers=headers)
    assert demo.status_code == 200 and f'<html lang="{lang}">' in demo.text and said(lang, "demo.h1") in demo.text

    permalink = api.get(f"/analyses/{analysis_id}", headers=headers)
    assert permalink.status_code == 200 and f'<html lang="{lang}">' in permalink.text
    for key in ("analysis.h1", "result.title", "decision.flagged", "card.what", "cat.sexual-orientation"):
        assert said(lang, key) in permalink.text, key
    assert said(lang, "sev.high") in permalink.text or said(lang, "sev.moderate") in permalink.text
    # the vocabulary's words stay in the text's language, and say so
    assert '<p lang="en"><bdi>' in permalink.text and '<dd lang="en"><bdi>' in permalink.text

    statement = api.get(f"/analyses/{analysis_id}/statement", headers=headers)
    assert statement.status_code == 200 and f'<html lang="{lang}">' in statement.text
    for key in ("statement.h1", "statement.decision", "statement.means", "statement.wrong"):
        assert said(lang, key) in statement.text, key

    forum = api.get("/demo/forum", headers=headers)
    assert forum.status_code == 200 and f'<html lang="{lang}">' in forum.text
    assert said(lang, "forum.local_news") in forum.text

    missing = api.get("/analyses/no-such-analysis", headers=headers)
    assert missing.status_code == 404 and f'<html lang="{lang}">' in missing.text
    assert said(lang, "error.title.404") in missing.text and said(lang, "error.back") in missing.text
    if lang == "en":
        assert "Your text was" in statement.text and "The detail below" not in missing.text
    else:
        assert said(lang, "error.note") in missing.text  # the detail itself comes from the code, in English


def test_the_stream_speaks_the_readers_language(api: TestClient, analysis_id: str) -> None:
    body = api.get(f"/analyses/{analysis_id}/stream", headers={"Accept-Language": "fr"}).text
    for key in ("state.done", "announce.finished", "badge.contentious", "stage.terms"):
        assert said("fr", key) in body, key
    assert said("fr", "announce.decision", label=said("fr", "label.flagged")) in body
    assert "Analysis finished." not in body


def test_moderator_pages_stay_english(api: TestClient) -> None:
    page = api.get("/login", headers={**HTML, "Accept-Language": "fr"})
    assert page.status_code == 200 and '<html lang="en">' in page.text
    assert said("fr", "language.label") not in page.text  # no switcher where nothing would change
