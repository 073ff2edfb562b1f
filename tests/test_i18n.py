"""The reader-facing pages in seven languages (web/i18n.py, web/locales/*.yaml, docs/i18n.md).

The language comes from a `lang` query parameter (remembered in a cookie), that cookie, or Accept-Language; English
otherwise. The catalogue is checked for completeness and placeholders, and its words shared with the widget are
checked against the widget's own table, read by running the widget script in node.
"""

from __future__ import annotations

import html
import json
import re
import string
import subprocess
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient
from markupsafe import escape

from web.charts import bar_chart
from web.i18n import COOKIE, LANGUAGES, LOCALES, catalogue, choose, current, negotiate
from web.language_names import LANGUAGE_NAMES
from web.review_words import queue_reason

from .support.node import SCRIPT, node_or_skip
from .test_auth import add_user, login
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
    # the staff pages follow the same rules as the readers' (they used to be English only)
    assert choose("/review", "lang=fr", "", "de") == ("fr", "fr")
    assert choose("/batches/x/report", "", f"{COOKIE}=it", "fr") == ("it", None)
    assert choose("/admin/sites", "", "", "el") == ("el", None)


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


# --- the pages of moderators, archivists and admins -----------------------------------------------------------------

STAFF_TOKEN = "an-admin-token-for-i18n"
FORUM = "https://forum.example"
DEFERRED = "the strike left him crippled"  # an ambiguous term and no model: needs review
# content, not chrome: the English test texts, the user, file and site names, codes and numbers
CONTENT = {"boss", "rows.csv", "labelled.csv", "Riverside", FORUM, FLAGGED, DEFERRED, "he was quoting"}
CONTENT |= {"a perfectly friendly sentence"}
CONTENT |= {"faggot", "junkie", "crippled"}  # the vocabulary's terms, in the report's term filter


class Chrome(HTMLParser):
    """The words a page shows as its own: text nodes outside content (`bdi`, `code`, `pre`, `time`, `textarea`, an
    element marked with another `lang`) and outside scripts; also the words of labels in attributes."""

    SKIP = frozenset({"bdi", "code", "pre", "time", "textarea", "script", "style", "q", "svg"})
    VOID = frozenset({"br", "img", "input", "meta", "link", "hr", "source", "wbr"})

    def __init__(self, page_lang: str) -> None:
        super().__init__()
        self.page_lang = page_lang
        self.stack: list[bool] = []  # for each open element: is its text content?
        self.words: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        content = (self.stack[-1] if self.stack else False) or tag in self.SKIP
        content = content or (named.get("lang") not in (None, self.page_lang) and tag != "html")
        for name in ("aria-label", "title", "data-copied", "data-select"):  # a placeholder is an example: content
            if named.get(name) and not content:
                self.words.append(str(named[name]))
        if tag not in self.VOID:
            self.stack.append(content)

    def handle_endtag(self, tag: str) -> None:
        if tag not in self.VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if not (self.stack and self.stack[-1]) and data.strip():
            self.words.append(" ".join(data.split()))


def chrome(page: str, lang: str) -> list[str]:
    parser = Chrome(lang)
    parser.feed(page)
    main = page.split('<main id="main">', 1)[1].split("</main>", 1)[0]
    parser_main = Chrome(lang)
    parser_main.feed(main)
    return parser_main.words


def english_left(english: str, other: str, lang: str, content: set[str]) -> list[str]:
    """Text of the page's own (in <main>) that reads the same in English and in `lang`: chrome left untranslated.
    Content (test texts, names, ids), and words the two languages share on purpose ("Site", "Label", "optional":
    the same in both catalogues) are not counted."""
    same = (v for k, v in catalogue("en").items() if catalogue(lang)[k] == v)
    shared = sorted({part for v in same for part in re.split(r"\{\w+\}", v) if part.strip()}, key=len, reverse=True)
    left = []
    for words in set(chrome(english, "en")) & set(chrome(other, lang)):
        rest = words
        for part in (*content, *shared):
            rest = rest.replace(part, " ")
        if re.search(r"[A-Za-z]{4,}", re.sub(r"\b(JSONL?|UTC)\b", "", rest)):
            left.append(words)
    return sorted(left)


def wait_for_job(api: TestClient, job_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # bounded
        if api.get(f"/api/v1/batches/{job_id}").json()["status"] == "complete":
            return
        time.sleep(0.1)
    raise AssertionError(f"batch {job_id} did not complete in 60 s")


@pytest.fixture(scope="module")
def staff(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A signed-in admin with something on every staff page: a site, a deferred and a disputed item in the queue, a
    decided item (with its "saved" message), and a finished batch with a failed row."""
    with client(tmp_path_factory.mktemp("i18n-staff"), admin_token=STAFF_TOKEN) as api:
        bearer = {"Authorization": f"Bearer {STAFF_TOKEN}"}
        site = api.post("/api/v1/sites", json={"name": "Riverside", "allowed_origins": [FORUM]}, headers=bearer)
        key = site.json()["key"]
        posts = [{"id": "d", "text": DEFERRED}, {"id": "f", "text": FLAGGED}]
        checked = api.post(
            f"/api/v1/widget/{key}/check", json={"lang": "en", "posts": posts}, headers={"Origin": FORUM}
        )
        results = {r["id"]: r for r in checked.json()["results"]}
        disputed = results["f"]["analysis_id"]
        feedback = {"analysis_id": disputed, "post_id": "f", "helpful": False, "comment": "he was quoting"}
        api.post(f"/api/v1/widget/{key}/feedback", json=feedback, headers={"Origin": FORUM})
        add_user(api, "boss", role="admin")
        assert login(api, "boss").status_code == 303
        # r2 has no text (never retryable), r4 a language no vocabulary covers (retryable in another one)
        rows = f"id,text,lang\nr1,{FLAGGED},en\nr2,,en\nr3,a perfectly friendly sentence,\nr4,some words,zz\n"
        upload = {"file": ("rows.csv", rows.encode())}
        job = api.post("/api/v1/batches", files=upload, data={"lang_column": "lang"}).json()["id"]
        wait_for_job(api, job)
        # one decision, so that the decided view lists something and the queue says what was saved
        item = api.get(f"/review/{disputed}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', item.text)
        assert csrf is not None
        decided = api.post(f"/review/{disputed}", data={"csrf": csrf[1], "action": "overturn:not_flagged"})
        assert decided.status_code == 200, decided.text
        # an evaluation on a small labelled file, and the fairness audit of English
        form = re.search(r'name="csrf" value="([^"]+)"', api.get("/admin/evaluations").text)
        assert form is not None
        labelled = f"text,label\n{FLAGGED},hateful\na perfectly friendly sentence,ok\n{DEFERRED},ok\n".encode()
        sent = api.post(
            "/admin/evaluations",
            files={"file": ("labelled.csv", labelled)},
            data={"csrf": form[1], "positive": "hateful"},
            follow_redirects=False,
        )
        audit = api.post("/admin/evaluations/audit", data={"csrf": form[1], "language": "en"}, follow_redirects=False)
        assert sent.status_code == audit.status_code == 303, (sent.text, audit.text)
        evaluation, fairness = sent.headers["location"], audit.headers["location"]
        for path in (evaluation, fairness):
            deadline = time.monotonic() + 60
            while 'id="evaluation-result"' not in api.get(path).text:  # bounded
                assert time.monotonic() < deadline, f"{path} shows no report after 60 s"
                time.sleep(0.2)
        ids = {"key": key, "item": results["d"]["analysis_id"], "decided": disputed, "job": job}
        yield api, {**ids, "evaluation": evaluation, "audit": fairness}


STAFF_PAGES = {
    # path (with the fixture's ids) -> keys that page must show
    "/review?done={decided}": ("review.h1", "review.lead", "review.approve", "review.tab.decided", "flash.undo"),
    "/review/{item}": ("item.back", "item.text", "item.keys", "item.terms_hint", "item.history", "item.flag"),
    "/review/decided": ("decided_view.lead", "decided_view.moderator", "review.tab.not_flagged"),
    "/batches": ("batches.h1", "batches.text_column", "batches.detect", "batches.start", "demo.mode_fast"),
    "/batches/{job}": ("batch.complete", "batch.failed_title", "batch.retry", "batch.retry_hint", "batch.report"),
    "/batches/{job}/report": ("report.downloads", "report.records", "report.charts", "report.frequent_terms"),
    "/admin/sites?added={key}": ("sites.h1", "sites.lead", "sites.origins", "sites.add_button", "sites.copy"),
    "/account": ("login.account",),
    "/review/quality": ("quality.h1", "quality.lead", "quality.deferral_rate", "quality.per_term", "quality.ece"),
    "/admin/sites/{key}?saved=values": ("site.saved.values", "site.values", "site.value_fp", "site.no_proposal"),
    "/admin/evaluations": ("evals.h1", "evals.lead", "evals.file_title", "evals.run_audit", "evals.past"),
    "{evaluation}": ("evals.fig.counted", "evals.confusion", "evals.chart.outcomes", "evals.report_json"),
    "{audit}": ("evals.audit", "evals.p_value", "evals.mean_delta", "evals.results_csv"),
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_staff_page_speaks_the_browsers_language(staff: tuple[TestClient, dict[str, str]], lang: str) -> None:
    api, ids = staff
    for template, keys in STAFF_PAGES.items():
        path = template.format(**ids)
        english = api.get(path, headers={**HTML, "Accept-Language": "en"})
        page = api.get(path, headers={**HTML, "Accept-Language": f"{lang}-XX,{lang};q=0.9,en;q=0.1"})
        assert page.status_code == english.status_code == 200, (path, page.text[-500:])
        assert f'<html lang="{lang}">' in page.text, path
        assert "Accept-Language" in page.headers["vary"] and "Cookie" in page.headers["vary"], path
        # the same switcher as the readers' pages
        assert said(lang, "language.label") in page.text and f'hreflang="{lang}" aria-current="true"' in page.text
        for key in keys:
            assert said(lang, key) in page.text, (path, key)
        if lang != "en":
            left = english_left(english.text, page.text, lang, {*CONTENT, *ids.values()})
            assert left == [], (path, left)


def test_the_staff_pages_messages_are_translated(staff: tuple[TestClient, dict[str, str]]) -> None:
    api, ids = staff
    french = {**HTML, "Accept-Language": "fr"}
    queue = api.get(f"/review?done={ids['decided']}", headers=french).text
    saved = said("fr", "flash.saved", what=said("fr", "flash.saved.overturn", label=said("fr", "label.not_flagged")))
    assert html.unescape(saved) in html.unescape(queue) and "Saved:" not in queue
    report = api.get(f"/batches/{ids['job']}/report", headers={**HTML, "Accept-Language": "de"}).text
    assert said("de", "report.choice.flagged_or_deferred") in report and "flagged or needs review" not in report
    assert said("de", "report.subset.needs_review") in report
    # a row's error is the code's detail, in English, and says so to a screen reader
    job = api.get(f"/batches/{ids['job']}", headers=french).text
    assert '<td lang="en">' in job
    sites = api.get(f"/admin/sites?added={ids['key']}", headers={**HTML, "Accept-Language": "el"}).text
    assert said("el", "sites.added", name="Riverside") in sites
    assert f'data-copied="{said("el", "sites.copied")}"' in sites  # admin.js says "Copied." in Greek


def test_the_login_form_and_its_errors_speak_the_browsers_language(api: TestClient) -> None:
    german = {**HTML, "Accept-Language": "de"}
    form = api.get("/login?next=/admin/sites", headers=german)
    assert form.status_code == 200 and '<html lang="de">' in form.text
    for key in ("login.name", "login.password", "login.token_link"):
        assert said("de", key) in form.text, key
    assert 'href="?next=%2Fadmin%2Fsites&amp;lang=fr"' in form.text  # the switcher keeps where login goes next
    token = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert token is not None
    data = {"username": "nobody", "password": "not the password", "csrf": token[1], "next": "/"}
    wrong = api.post("/login", data=data, headers=german)
    assert wrong.status_code == 400 and said("de", "login.wrong") in wrong.text
    assert "Wrong name or password." not in wrong.text
    forged = api.post("/login", data={**data, "csrf": "forged"}, headers={**HTML, "Accept-Language": "pt"})
    assert forged.status_code == 403 and said("pt", "login.expired") in forged.text


def test_a_chart_says_what_it_shows_in_the_pages_language() -> None:
    token = current.set("it")
    try:
        empty = str(bar_chart([], title="Lingue"))
        drawn = str(bar_chart([("a", 3), ("b", 1)], title="Lingue", max_bars=1))
    finally:
        current.reset(token)
    assert said("it", "chart.empty", title="Lingue") in empty
    assert "2" not in said("it", "chart.bars.one", count=1, label="a", value=3)
    assert said("it", "chart.bars.one", count=1, label="a", value=3) in drawn and "; altre 1 non mostrate" in drawn
    assert "No data" not in str(bar_chart([], title="x"))[:0] + empty


def test_why_an_item_waits_is_said_in_the_moderators_language() -> None:
    token = current.set("de")
    try:
        said = {
            reason: queue_reason(reason)
            for reason in (
                "deferred",
                "deferred by the site's threshold: confidence 0.42",
                "disputed by a reader: <b>he</b> was quoting",
                "disputed by a reader: (no comment)",
                "spot check: an automatic “not flagged” drawn at random",
                "1 ambiguous term(s) could not be decided",  # the engine's: a detail, left as it is
            )
        }
    finally:
        current.reset(token)
    assert said["deferred"] == said_in("de", "queue.deferred")
    threshold = said["deferred by the site's threshold: confidence 0.42"]
    assert threshold == said_in("de", "queue.threshold", confidence=0.42)
    assert said["disputed by a reader: <b>he</b> was quoting"] == said_in(
        "de", "queue.disputed", comment="&lt;b&gt;he&lt;/b&gt; was quoting"
    )
    assert said["disputed by a reader: (no comment)"] == said_in("de", "queue.disputed_silently")
    spot = said["spot check: an automatic “not flagged” drawn at random"]
    assert spot == said_in("de", "queue.spot_check", label=catalogue("de")["label.not_flagged"])
    assert said["1 ambiguous term(s) could not be decided"] is None


def said_in(lang: str, key: str, **params: object) -> str:
    words = str(escape(catalogue(lang)[key]))
    return words.format(**params) if params else words


def test_the_queue_marks_the_engines_reasons_as_english(staff: tuple[TestClient, dict[str, str]]) -> None:
    api, _ = staff
    queue = api.get("/review", headers={**HTML, "Accept-Language": "it"}).text
    reasons = queue.split('<ul class="reasons">', 1)[1].split("</ul>", 1)[0]
    assert '<li lang="en"><bdi>' in reasons  # the deferred item's engine reason
