"""Bringing a site's past moderation decisions in as precedents (`unerase precedents import`).

Each row of a CSV or JSONL file names a text, the term as written in it, and the verdict moderators gave that
use (`contentious` or `neutral`), optionally the text's language. The shipped detector (with the site's term
rules) finds the term in the text; each occurrence it finds becomes a precedent of the site, exactly as if a
moderator had decided it in the review queue. Rows that cannot be used are refused one by one, with their line
number and the reason; the others are imported. Importing the same file again replaces its earlier precedents
(one analysis per site and text) instead of doubling them.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import Engine
from sqlmodel import Session

from engine.detector import Detector
from engine.errors import UneraseError
from engine.jsonlines import UnreadableLine, parse_line
from engine.precedents import VERDICTS
from engine.scope import Scope
from web import precedents
from web.models import AnalysisRecord, Precedent

FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


@dataclass(frozen=True)
class Columns:
    text: str
    term: str
    verdict: str
    language: str | None = None


@dataclass(frozen=True)
class Refusal:
    line: int
    reason: str


@dataclass
class ImportReport:
    rows: int = 0
    used: int = 0  # rows that gave at least one precedent
    precedents: int = 0
    refused: list[Refusal] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "used": self.used,
            "precedents": self.precedents,
            "refused": [{"line": r.line, "reason": r.reason} for r in self.refused],
        }


def read_rows(path: Path, columns: Columns) -> Iterator[tuple[int, dict[str, Any] | None, str]]:
    """(line, row, problem) for each record of a CSV file (with a header line) or a JSONL file; a row is None
    when the line cannot be read, with the problem said. A named column missing from the CSV header stops the
    import before any row (every row would be refused for it)."""
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise UneraseError(f"{path.name}: the file type is not known; accepted: {', '.join(FORMATS)}")
    if not path.is_file():
        raise UneraseError(f"{path}: no such file")
    wanted = [c for c in (columns.text, columns.term, columns.verdict, columns.language) if c]
    with path.open(encoding="utf-8-sig", newline="") as handle:
        if kind == "csv":
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in wanted if c not in header]
            if missing:
                raise UneraseError(
                    f"{path.name}: no column named {', '.join(repr(c) for c in missing)}; "
                    f"its columns: {', '.join(header) or 'none (the file is empty)'}"
                )
            line = reader.line_num
            for row in reader:
                yield line + 1, dict(row), ""
                line = reader.line_num
            return
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                record = parse_line(raw)
            except UnreadableLine as exc:
                yield number, None, exc.reason
                continue
            if not isinstance(record, dict):
                yield number, None, "not a JSON object"
                continue
            yield number, record, ""


def _analysis_id(site_key: str, text: str) -> str:
    return "import-" + hashlib.sha256(f"{site_key}\x00{text}".encode()).hexdigest()[:25]


def import_precedents(
    engine: Engine,
    detector: Detector,
    site_key: str,
    path: Path,
    columns: Columns,
    *,
    scope: Scope | None = None,
    language: str | None = None,
    moderator: str = "import",
) -> ImportReport:
    """Reads the file and stores its usable rows as the site's precedents; see the module's docstring."""
    report = ImportReport()
    pending: dict[str, tuple[AnalysisRecord, dict[str, Precedent]]] = {}
    for line, row, problem in read_rows(path, columns):
        report.rows += 1

        def refuse(reason: str, line: int = line) -> None:
            report.refused.append(Refusal(line, reason))

        if row is None:
            refuse(problem)
            continue
        missing = [c for c in (columns.text, columns.term, columns.verdict) if row.get(c) is None]
        if missing:
            refuse(f"missing column {', '.join(repr(c) for c in missing)}")
            continue
        empty = [c for c in (columns.text, columns.term, columns.verdict) if not str(row[c]).strip()]
        if empty:
            refuse(f"empty value in column {', '.join(repr(c) for c in empty)}")
            continue
        text, term, verdict = str(row[columns.text]), str(row[columns.term]).strip(), str(row[columns.verdict])
        verdict = verdict.strip().casefold()
        if verdict not in VERDICTS:
            refuse(f"unknown verdict {row[columns.verdict]!r}; accepted: {', '.join(VERDICTS)}")
            continue
        lang = (str(row.get(columns.language) or "").strip() if columns.language else "") or language
        if lang and lang not in detector.languages:
            refuse(f"language {lang!r} is not supported; supported: {', '.join(detector.languages)}")
            continue
        if term.casefold() not in text.casefold():
            refuse(f"term {term!r} not found in the text")
            continue
        try:
            detection = detector.detect(text, lang or None)
        except UneraseError as exc:
            refuse(exc.message)
            continue
        hits = scope.apply(detection.hits) if scope is not None else detection.hits
        matching = [h for h in hits if h.surface.casefold() == term.casefold()]
        if not matching:
            surfaces = ", ".join(sorted({repr(h.surface) for h in hits})) or "none"
            refuse(f"term {term!r} is in the text but is not a vocabulary term there (terms found: {surfaces})")
            continue
        analysis_id = _analysis_id(site_key, text)
        document = {
            "id": analysis_id,
            "text": detection.text,
            "language": detection.language,
            "hits": [h.to_dict(full=False) for h in matching],
        }
        found = precedents.from_document(document, {h.id: verdict for h in matching}, moderator, site_key)
        record, stored = pending.setdefault(
            analysis_id,
            (
                AnalysisRecord(
                    id=analysis_id,
                    text=detection.text,
                    status="complete",
                    source="import",
                    language=detection.language,
                    requested_language=lang or None,
                ),
                {},
            ),
        )
        stored.update({p.hit_id: p for p in found})  # the same text and term twice: the later row counts
        report.used += 1
    # one analysis per site and text holds all its rows' precedents, stored in place of an earlier import's
    for analysis_id, (record, stored) in pending.items():
        with Session(engine) as session:
            if session.get(AnalysisRecord, analysis_id) is None:
                session.add(record)
                session.commit()
        precedents.replace(engine, analysis_id, list(stored.values()))
        report.precedents += len(stored)
    return report
