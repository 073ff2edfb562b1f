"""The batch report (issue 16): headings for every section and chart, the table of flagged and deferred records
with their terms, its filters, and CSV/JSONL downloads of each subset, formula cells still neutralised."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

from fastapi.testclient import TestClient

from .support.batches import csv_upload, upload, wait_complete
from .webapp import client

# csv_upload(60): rows cycle through a flagged text ("faggot", "junkie"), a friendly one and a deferred one
# ("cripple", ambiguous, no model) that starts with a formula; row 3 is empty and fails.


def job(api: TestClient) -> str:
    job_id = str(upload(api, "records.csv", csv_upload(60), text_column="body", id_column="ref").json()["id"])
    wait_complete(api, job_id)
    return job_id


def test_the_report_has_headings_and_lists_flagged_and_deferred_records(tmp_path: Path) -> None:
    with client(tmp_path) as api:
        job_id = job(api)
        page = api.get(f"/batches/{job_id}/report")
    text = page.text
    headings = re.findall(r"<h([23])[^>]*>([^<]+)</h\1>", text)
    assert [name for level, name in headings if level == "2"] == ["Downloads by outcome", "Records", "Charts", "Counts"]
    charts = ["Decisions", "Targeted characteristics", "Most frequent terms", "Languages"]
    assert [name for level, name in headings if level == "3"][:4] == charts  # one heading per chart
    assert text.count('class="chart" role="img"') == 4
    records = page.context["records"]  # type: ignore[attr-defined]
    # by default: what needs a person's eyes, 19 flagged and 20 deferred, in file order
    assert page.context["matching"] == 39 and len(records) == 39  # type: ignore[attr-defined]
    assert {record.label for record in records} == {"flagged", "needs_review"}
    assert [record.id for record in records[:3]] == ["rec-0", "rec-2", "rec-5"]
    assert records[0].terms == ("faggot", "junkie") and records[1].terms == ("cripple",)
    assert "<td>faggot, junkie</td>" in text and "39 records match." in text
    assert '<option value="flagged,needs_review" selected>flagged or needs review</option>' in text


def test_the_records_filter_by_label_term_and_category(tmp_path: Path) -> None:
    with client(tmp_path) as api:
        job_id = job(api)

        def listed(query: str) -> list[str]:
            page = api.get(f"/batches/{job_id}/report?{query}")
            assert page.status_code == 200, page.text
            return [record.id for record in page.context["records"]]  # type: ignore[attr-defined]

        assert len(listed("label=flagged")) == 19 and len(listed("label=not_flagged")) == 20
        assert listed("label=failed") == ["rec-3"]
        assert len(listed("label=")) == 60  # all records
        assert len(listed("label=&term=cripple")) == 20 and listed("label=&term=cripple")[0] == "rec-2"
        assert len(listed("label=flagged&term=junkie")) == 19 and listed("label=needs_review&term=junkie") == []
        flagged_categories = api.get(f"/batches/{job_id}/report").context["categories"]  # type: ignore[attr-defined]
        assert flagged_categories, "the fixture's terms name categories"
        some = flagged_categories[0]
        assert listed(f"label=&category={some}"), some
        assert listed("label=&category=no-such-category") == []
        page = api.get(f"/batches/{job_id}/report?label=flagged&term=junkie")
        assert (
            'id="filtered-csv" href="/api/v1/batches/' + job_id + '/results.csv?label=flagged&amp;term=junkie"'
            in page.text
        )
        assert api.get(f"/batches/{job_id}/report?label=maybe").status_code == 400


def test_each_subset_downloads_as_csv_and_jsonl_with_formulas_neutralised(tmp_path: Path) -> None:
    with client(tmp_path) as api:
        job_id = job(api)
        page = api.get(f"/batches/{job_id}/report").text
        for subset in ("flagged", "needs_review", "failed"):
            for kind in ("csv", "jsonl"):
                assert f'href="/api/v1/batches/{job_id}/results.{kind}?label={subset}" download' in page
        deferred = api.get(f"/api/v1/batches/{job_id}/results.csv?label=needs_review")
        assert deferred.status_code == 200
        assert f'filename="unerase-{job_id[:8]}-needs_review.csv"' in deferred.headers["content-disposition"]
        rows = list(csv.DictReader(io.StringIO(deferred.text)))
        assert len(rows) == 20 and {row["label"] for row in rows} == {"needs_review"}
        assert all(not cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())
        assert rows[0]["terms"] == "cripple"
        failed = [
            json.loads(line)
            for line in api.get(f"/api/v1/batches/{job_id}/results.jsonl?label=failed").text.splitlines()
        ]
        assert [(row["id"], "empty" in row["error"]) for row in failed] == [("rec-3", True)]
        flagged = api.get(f"/api/v1/batches/{job_id}/results.jsonl?label=flagged&term=junkie").text.splitlines()
        assert len(flagged) == 19
        everything = api.get(f"/api/v1/batches/{job_id}/results.csv").text.splitlines()
        assert len(everything) == 61  # the unfiltered download is unchanged: the header and every row
        refused = api.get(f"/api/v1/batches/{job_id}/results.csv?label=bogus")
        assert (
            refused.status_code == 400
            and "accepted: flagged, needs_review, not_flagged, failed" in refused.json()["detail"]
        )
