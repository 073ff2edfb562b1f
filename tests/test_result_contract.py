"""One result contract (docs/contracts.md, "Result document"): the command line's `analyze --json`, the API's
result document, a line of `unerase batch` and a line of the web app's batch results say the same about one
text — language, mode, models, hits with their spans and verdicts, targeting, explanation, decision, errors.

All four run in vocabulary-only mode on the fixture vocabulary with the sources a server runs by default (the
labelled examples, the learned uses), so they are the same method on the same text.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from engine.batch import RESULT_COLUMNS, result_row
from engine.cli import main
from engine.events import AnalysisStarted, Decision, Done
from engine.result import fold, language_of, record, stored
from web.batch_claims import BatchClaims, RowResult
from web.batches import exported, statistics
from web.db import make_engine
from web.models import BatchJob, BatchRow
from web.store import Store

from .support.paths import FIXTURES
from .webapp import client

# an unambiguous slur, a quoted word (a mention) and an ambiguous word the labelled examples decide
TEXT = 'What a faggot he is. He wrote "junkie" in quotes and spoke of a crippled economy.'
VOCAB = str(FIXTURES / "vocab")
# what the API document says about the hit's issue, and the rules' first reading of its use: a record leaves
# these out (engine.result), everything else a record's hit has is the document's
ISSUE_TEXT = {"description", "suggestion_note", "suggested_terms", "sources", "use", "use_cue"}


def cli_json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    code = main([*args, "--vocab", VOCAB, "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0, out
    text = out.strip()
    return [json.loads(text)] if text.startswith("{\n") else [json.loads(line) for line in text.splitlines()]


def web_batch_line(api: TestClient) -> dict[str, Any]:
    upload = json.dumps({"id": "post-1", "text": TEXT, "lang": "en"}).encode()
    job = api.post("/api/v1/batches", files={"file": ("posts.jsonl", upload)}, data={"lang_column": ""})
    assert job.status_code == 202, job.text
    deadline = time.monotonic() + 60
    while api.get(f"/api/v1/batches/{job.json()['id']}").json()["status"] != "complete":  # bounded
        assert time.monotonic() < deadline, "the batch job did not complete in 60 s"
        time.sleep(0.1)
    lines = api.get(f"/api/v1/batches/{job.json()['id']}/results.jsonl").text.splitlines()
    assert len(lines) == 1
    line: dict[str, Any] = json.loads(lines[0])
    return line


def shared(result: dict[str, Any]) -> dict[str, Any]:
    """The fields every form of a result carries, as a record names them."""
    return {
        "language": result["language"],
        "mode": result["mode"],
        "models": result["models"],
        "hits": [{k: v for k, v in hit.items() if k not in ISSUE_TEXT} for hit in result["hits"]],
        "targeting": result.get("targeting"),
        "explanation": result.get("explanation"),
        "decision": result.get("decision"),
        "errors": result.get("errors", []),
    }


def test_the_cli_the_api_and_both_batches_give_one_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNERASE_CACHE_DIR", str(tmp_path / "cache"))
    (cli,) = cli_json(capsys, "analyze", TEXT, "--lang", "en", "--json")
    source = tmp_path / "posts.jsonl"
    source.write_text(json.dumps({"id": "post-1", "text": TEXT, "lang": "en"}) + "\n", encoding="utf-8")
    (batch,) = cli_json(capsys, "batch", str(source))
    (many,) = cli_json(capsys, "analyze", "--input", str(source))
    with client(tmp_path, examples_enabled=True, learned_uses_enabled=True) as api:
        created = api.post("/api/v1/analyses", json={"text": TEXT, "lang": "en"})
        assert created.status_code == 201, created.text
        document = api.get(f"/api/v1/analyses/{created.json()['id']}").json()
        web_batch = web_batch_line(api)

    # the text was analysed for real: a flagging slur, a quoted mention, an ambiguous word decided by the examples
    hits = {hit["surface"]: hit for hit in document["hits"]}
    assert list(hits) == ["faggot", "junkie", "crippled"]
    assert all(TEXT[h["start"] : h["end"]] == surface for surface, h in hits.items())
    assert hits["faggot"]["verdict"]["status"] == "contentious" and hits["faggot"]["verdict"]["use"] == "attack"
    assert hits["junkie"]["verdict"]["use"] == "quoted"
    assert hits["crippled"]["verdict"]["decided_by"] == "examples"
    assert document["decision"]["label"] == "flagged" and document["models"] == ["none"]

    expected = shared(document)
    for name, line in (("analyze --json", cli), ("analyze --input", many), ("batch", batch), ("web batch", web_batch)):
        assert shared(line) == expected, name
        # a record's hits are the document's without the issue's explanation (hit for hit, key for key)
        assert [set(h) for h in line["hits"]] == [set(h) - ISSUE_TEXT for h in document["hits"]], name
        assert line["lang"] == line["language"] == "en", name  # `lang`: the alias kept for one release
    assert cli["id"] is None and {many["id"], batch["id"], web_batch["id"]} == {"post-1"}
    assert batch["line"] == web_batch["line"] == 1
    assert "lang" not in document  # the API document has only ever said `language`


def test_a_record_written_before_the_rename_is_still_read() -> None:
    old = {"id": "a", "line": 2, "lang": "de", "hits": [], "decision": {"label": "not_flagged", "categories": []}}
    assert language_of(old) == "de" and language_of({"language": "nl", "lang": "nl"}) == "nl"
    row = dict(zip(RESULT_COLUMNS, result_row(old), strict=True))
    assert row["lang"] == "de" and row["label"] == "not_flagged"
    assert language_of({"hits": []}) is None


def test_the_fold_reads_typed_and_stored_events_alike_and_a_record_keeps_only_what_the_stream_had() -> None:
    events = [
        AnalysisStarted("a1", "en", False, 1.0, "vocabulary-only", "v1", "p1", ()),
        Decision("not_flagged", "none", 0.9, (), ("no vocabulary term found",)),
        Done(12.0, cached=False),
    ]
    assert fold(events) == fold([stored(e) for e in events])
    result = fold(events)
    assert result["language"] == "en" and result["models"] == ["none"] and result["elapsed_ms"] == 12.0
    assert result["targeting"] is None and result["errors"] == []
    line = record(result, "r1")
    assert line == {
        "id": "r1",
        "language": "en",
        "lang": "en",
        "mode": "vocabulary-only",
        "models": ["none"],
        "hits": [],
        "decision": {
            "label": "not_flagged",
            "severity": "none",
            "confidence": 0.9,
            "categories": [],
            "reasons": ["no vocabulary term found"],
        },
    }
    # a stream that ended before it began says only what it had
    assert record(fold([]), "r2") == {"id": "r2", "hits": []}


def test_a_web_batch_stored_before_the_rename_is_counted_and_exported_by_its_language(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'unerase.db'}")
    store = Store(engine)
    rows = [BatchRow(job_id="j1", line=n, record_id=f"r{n}", text="a text") for n in (1, 2)]
    store.create_job(BatchJob(id="j1", filename="posts.jsonl", format="jsonl"), rows)
    old = {"id": "r1", "lang": "de", "hits": [], "decision": {"label": "not_flagged", "categories": []}}
    new = record(fold([AnalysisStarted("a2", "nl", False, 1.0, "vocabulary-only", "v1", "p1", ())]), "r2")
    claims = BatchClaims(engine)
    pending = claims.claim("j1", "node", 10, lease_seconds=60)
    claims.save(
        "node",
        [
            RowResult(row.id or 0, "done", None, json.dumps(result))
            for row, result in zip(pending, (old, new), strict=True)
        ],
    )
    assert dict(statistics(store, "j1")["languages"]) == {"de": 1, "nl": 1}
    assert [result_row(exported(row))[RESULT_COLUMNS.index("lang")] for row in store.iter_rows("j1")] == ["de", "nl"]
    engine.dispose()
