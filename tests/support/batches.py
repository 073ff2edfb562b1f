"""Batch jobs in tests through the API: an upload, a CSV of records, waiting for the job to complete."""

from __future__ import annotations

import csv
import io
import time
from typing import Any

from fastapi.testclient import TestClient

TEXTS = ["a faggot and a junkie", "a perfectly friendly sentence", '=HYPERLINK("http://x") and a cripple']


def csv_upload(rows: int) -> bytes:
    """`rows` records (ref;body;note) cycling through TEXTS; the fourth has an empty text."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";")
    writer.writerow(["ref", "body", "note"])
    for number in range(rows):
        writer.writerow([f"rec-{number}", "" if number == 3 else TEXTS[number % 3], "x"])
    return out.getvalue().encode()


def wait_complete(api: TestClient, job_id: str, seconds: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # bounded
        job: dict[str, Any] = api.get(f"/api/v1/batches/{job_id}").json()
        if job["status"] == "complete":
            return job
        time.sleep(0.1)
    raise AssertionError(f"batch {job_id} did not complete in {seconds} s: {job}")


def upload(api: TestClient, name: str, data: bytes, **form: str) -> Any:
    return api.post("/api/v1/batches", files={"file": (name, data)}, data={"lang_column": "", **form})
