"""/admin/evaluations: a labelled upload analysed as a batch job, its report equal to `unerase eval`'s, the audit."""

from __future__ import annotations

import base64
import html
import json
import re
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.support.labelled import fixture_csv

from .webapp import client, client_on, sse_events

TOKEN = "evaluation-admin-token"
BASIC = {"Authorization": "Basic " + base64.b64encode(f"admin:{TOKEN}".encode()).decode()}


def csrf(api: TestClient) -> str:
    page = api.get("/admin/evaluations", headers=BASIC)
    assert page.status_code == 200, page.text
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found
    return found.group(1)


def wait_for_report(api: TestClient, path: str, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # bounded
        page = api.get(path, headers=BASIC)
        if 'id="evaluation-result"' in page.text:
            return page.text
        time.sleep(0.2)
    raise AssertionError(f"{path} shows no report after {seconds} s")


def upload(api: TestClient, name: str, data: bytes, **form: str) -> object:
    fields = {"csrf": csrf(api), "lang_column": "lang", "group_column": "src", "term_column": "terms", **form}
    return api.post(
        "/admin/evaluations", headers=BASIC, files={"file": (name, data)}, data=fields, follow_redirects=False
    )


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_an_uploaded_labelled_file_gives_the_cli_report(tmp_path: Path, database: str) -> None:
    data = fixture_csv(tmp_path).read_bytes()
    with client_on(database, tmp_path, admin_token=TOKEN) as api:
        response = upload(api, "labelled.csv", data, review_as="negative")
        assert response.status_code == 303, response.text  # type: ignore[attr-defined]
        location = response.headers["location"]  # type: ignore[attr-defined]
        assert re.fullmatch(r"/admin/evaluations/[0-9a-f]{32}", location)
        page = wait_for_report(api, location)
        # review counted as not flagged: precision 2/3, recall 2/5, deferral 3/10 (tests/test_evaluation.py)
        assert '<td data-figure="precision">66.7%</td>' in page
        assert '<td data-figure="recall">40.0%</td>' in page
        assert '<td data-figure="deferral_rate">30.0%</td>' in page
        assert page.count("<svg") == 3 and "Precision per term" in page
        assert "needs_review counted as: <strong>negative</strong>" in page

        report = api.get(location + "/report.json", headers=BASIC).json()
        assert report["overall"]["table"]["negative"] == {"flagged": 1, "not_flagged": 2, "needs_review": 2, "error": 0}
        assert report["configuration"]["mode"] == "vocabulary-only"
        assert set(report["by_group"]) == {"forum", "mail"}

        stream = api.get(location + "/stream", headers=BASIC)
        events = sse_events(stream.text)
        assert events[-1][0] == "done" and 'id="evaluation-result"' in events[-1][1]

        listing = api.get("/admin/evaluations", headers=BASIC).text
        version = report["configuration"]["vocabulary_version"][:12]
        assert "labelled.csv" in listing and f"<code>{version}</code>" in listing
        assert "P 66.7% · R 40.0% · F1 50.0%" in listing
        # the texts were a batch job: its downloads work
        job_link = re.search(r"/api/v1/batches/([0-9a-f]{32})/results.jsonl", page)
        assert job_link
        lines = api.get(job_link.group(0)).text.splitlines()
        assert len(lines) == 10 and json.loads(lines[0])["decision"]["label"] == "flagged"


@pytest.mark.parametrize(
    ("name", "data", "form", "message"),
    [
        ("bad.csv", b"text,verdict\nhello,1\n", {}, "bad.csv: line 1, column 'label': the header has no such column"),
        ("bad.csv", b"text,label,lang\nhello,perhaps,en\n", {"group_column": "", "term_column": ""},
         "bad.csv: line 2, column 'label': the label 'perhaps' is not known"),
        ("empty.csv", b"", {}, "empty.csv: line 1: the file is empty"),
        ("latin.csv", "text,label,lang,src,terms\ncaf\u00e9,0,en,a,\n".encode("latin-1"), {},
         "latin.csv: line 2, column 4: byte 0xe9 is not valid UTF-8"),
    ],
)  # fmt: skip
def test_bad_files_are_refused_on_the_page(
    tmp_path: Path, name: str, data: bytes, form: dict[str, str], message: str
) -> None:
    with client(tmp_path, admin_token=TOKEN) as api:
        response = upload(api, name, data, **form)
        assert response.status_code == 422  # type: ignore[attr-defined]
        assert message in html.unescape(response.text)  # type: ignore[attr-defined]
        assert "None yet." in response.text  # type: ignore[attr-defined]  # nothing was stored


def test_the_audit_runs_from_the_page(tmp_path: Path) -> None:
    with client(tmp_path, admin_token=TOKEN) as api:
        response = api.post(
            "/admin/evaluations/audit",
            headers=BASIC,
            data={"csrf": csrf(api), "language": "en"},
            follow_redirects=False,
        )
        assert response.status_code == 303, response.text
        page = wait_for_report(api, response.headers["location"])
        assert "en: 9 of 9 tuples decided alike (100.0%)" in page
        report = api.get(response.headers["location"] + "/report.json", headers=BASIC).json()
        (en,) = report["languages"]
        assert len(en["groups"]) == 12 and en["treated_differently"] == []


def test_the_audits_language_select_names_the_languages(tmp_path: Path) -> None:
    with client(tmp_path, admin_token=TOKEN) as api:
        page = api.get("/admin/evaluations", headers=BASIC).text
    select = page[page.index('<select id="a-lang"') : page.index("</select>", page.index('id="a-lang"'))]
    assert "all loaded (Deutsch, Ελληνικά, English, Italiano, Nederlands)" in select
    assert re.findall(r'<option value="(\w+)">([^<]+)</option>', select) == [
        ("de", "Deutsch"),
        ("el", "Ελληνικά"),
        ("en", "English"),
        ("it", "Italiano"),
        ("nl", "Nederlands"),
    ]


def test_the_page_is_for_admins_only(tmp_path: Path) -> None:
    with client(tmp_path, admin_token=TOKEN) as api:
        # a browser without a session or credentials is sent to the login form (issue 16), never shown the page
        stranger = api.get("/admin/evaluations", follow_redirects=False)
        assert stranger.status_code == 303 and stranger.headers["location"] == "/login?next=%2Fadmin%2Fevaluations"
        forged = api.post("/admin/evaluations/audit", headers=BASIC, data={"csrf": "forged"})
        assert forged.status_code == 403
