"""Evaluations and fairness audits run from the admin page, on top of the batch machinery.

The texts of a labelled file (or of the audit's filled templates) become an ordinary batch job, so the
batch worker analyses them with the server's pipeline, with its progress stream, row errors and result
downloads. An `Evaluation` row links the job to what the batch does not know: each line's label (or audit
case) and the configuration; once the job is complete the engine's counting (engine.evaluation,
engine.audit) turns the stored results into the same report as `unerase eval` / `unerase audit`, which
is then kept with the row. All functions here are blocking: call them through run_in_threadpool.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlmodel import Session, col, select

from engine.audit import Case, cases, load_templates, score, shipped_templates
from engine.batch import Record
from engine.errors import UneraseError
from engine.evaluation import REVIEW_AS, HitOutcome, Prediction, ReviewAs, RunInfo, evaluate
from engine.labelled import Columns, LabelledRow, Labels, parse_labelled
from engine.result import language_of
from web.batches import rows_of
from web.i18n import text
from web.models import BatchJob, BatchRow, Evaluation
from web.services import Services


@dataclass(frozen=True)
class EvalOptions:
    columns: Columns
    labels: Labels
    review_as: ReviewAs = "separate"
    mode: str = ""


def _configuration(services: Services, mode: str) -> dict[str, Any]:
    models = [b.model_id for b in services.analyzer.backends.all()]
    return {
        "vocabulary_version": services.detector.vocabulary.version,
        "prompt_version": services.analyzer.prompts.version,
        "models": ", ".join(models) or "none",
        "mode": mode if models else "vocabulary-only",
        "threshold": services.settings.threshold,
    }


def _queue(services: Services, records: Sequence[Record], filename: str, mode: str) -> BatchJob:
    job = BatchJob(id=uuid.uuid4().hex, filename=filename[:200], format="eval", mode=mode)
    services.store.create_job(job, rows_of(job.id, records))
    return job


def _save(evaluation: Evaluation, services: Services) -> Evaluation:
    with Session(services.store.engine, expire_on_commit=False) as session:
        session.add(evaluation)
        session.commit()
    return evaluation


def create_evaluation(services: Services, data: bytes, filename: str, options: EvalOptions, user: str) -> Evaluation:
    """Reads the whole labelled file (refusing it, with file, line and column, before anything is stored),
    then queues its texts."""
    if options.review_as not in REVIEW_AS:
        raise UneraseError(f"review_as {options.review_as!r} is not known; accepted: {', '.join(REVIEW_AS)}")
    mode = options.mode or services.settings.mode
    rows = parse_labelled(data, filename, options.columns, options.labels, max_rows=services.settings.max_batch_rows)
    records = [Record(row.line, str(row.line), row.text, row.lang) for row in rows]
    labels = {
        str(row.line): [row.positive, row.lang, row.group, row.terms, row.spans and [list(s) for s in row.spans]]
        for row in rows
    }
    job = _queue(services, records, f"evaluation: {filename}", mode)
    columns = options.columns
    chosen = {
        "text_column": columns.text,
        "label_column": columns.label,
        "lang_column": columns.lang,
        "group_column": columns.group,
        "term_column": columns.terms,
        "span_column": columns.spans,
        "positive": list(options.labels.positive),
        "negative": list(options.labels.negative),
    }
    evaluation = Evaluation(
        id=uuid.uuid4().hex,
        created_by=user,
        kind="eval",
        job_id=job.id,
        filename=filename[:200],
        review_as=options.review_as,
        options=json.dumps(chosen),
        labels=json.dumps(labels, ensure_ascii=False),
        **_configuration(services, mode),
    )
    return _save(evaluation, services)


def create_audit(services: Services, languages: Sequence[str], mode: str, user: str) -> Evaluation:
    """Queues every shipped template filled with every group, for the languages the server has loaded."""
    mode = mode or services.settings.mode
    wanted = [lang for lang in (languages or services.detector.languages) if lang in services.detector.languages]
    all_cases = cases(load_templates([shipped_templates()]), wanted)
    if not all_cases:
        raise UneraseError(
            f"no audit templates for {', '.join(languages) or 'the loaded languages'}; "
            f"loaded: {', '.join(services.detector.languages)}"
        )
    records = [Record(n, str(n), case.text, case.language) for n, case in enumerate(all_cases, start=1)]
    job = _queue(services, records, "fairness audit", mode)
    labels = {str(n): [c.language, c.template, c.kind, c.group, c.category] for n, c in enumerate(all_cases, start=1)}
    evaluation = Evaluation(
        id=uuid.uuid4().hex,
        created_by=user,
        kind="audit",
        job_id=job.id,
        filename="shipped templates (audit/)",
        options=json.dumps({"languages": wanted}),
        labels=json.dumps(labels, ensure_ascii=False),
        **_configuration(services, mode),
    )
    return _save(evaluation, services)


def get(services: Services, evaluation_id: str) -> Evaluation | None:
    with Session(services.store.engine, expire_on_commit=False) as session:
        return session.get(Evaluation, evaluation_id)


def recent(services: Services, limit: int = 100) -> list[Evaluation]:
    with Session(services.store.engine, expire_on_commit=False) as session:
        query = select(Evaluation).order_by(col(Evaluation.created_at).desc()).limit(limit)
        return list(session.exec(query))


def prediction_of(row: BatchRow) -> Prediction:
    """A stored batch result (engine.result.record) as the engine's counting reads it."""
    if row.status != "done" or not row.result:
        return Prediction("error", error=row.error or "not analysed")
    result = json.loads(row.result)
    decision = result.get("decision") or {}
    hits = tuple(
        HitOutcome(
            h.get("term", ""),
            h.get("term_id", ""),
            h.get("issue_id", ""),
            h.get("surface", ""),
            int(h.get("start", 0)),
            int(h.get("end", 0)),
            (h.get("verdict") or {}).get("status", ""),
        )
        for h in result.get("hits", [])
    )
    return Prediction(
        decision.get("label", "error"),
        float(decision.get("confidence", 0.0)),
        language_of(result) or "",
        hits,
        tuple(decision.get("reasons", [])),
    )


def _info(evaluation: Evaluation) -> RunInfo:
    return RunInfo(
        evaluation.vocabulary_version,
        evaluation.prompt_version,
        tuple(m for m in evaluation.models.split(", ") if m and m != "none"),
        evaluation.mode,
        evaluation.threshold,
    )


def report_of(services: Services, evaluation: Evaluation) -> dict[str, Any] | None:
    """The report's JSON form once the job is complete (computed on first request and kept), else None."""
    if evaluation.report is not None:
        report: dict[str, Any] = json.loads(evaluation.report)
        return report
    job = services.store.job(evaluation.job_id)
    if job is None or job.status != "complete":
        return None
    labels = json.loads(evaluation.labels)
    rows = list(services.store.iter_rows(evaluation.job_id))
    predictions = [prediction_of(row) for row in rows]
    if evaluation.kind == "audit":
        all_cases = []
        for row in rows:
            language, template, kind, group, category = labels[str(row.line)]
            all_cases.append(Case(language, template, kind, group, row.text, category))
        data = score(all_cases, predictions, _info(evaluation)).to_dict()
    else:
        labelled = []
        for row in rows:
            positive, lang, group, terms, spans = labels[str(row.line)]
            labelled.append(
                LabelledRow(
                    row.line,
                    row.text,
                    positive,
                    lang,
                    group,
                    tuple(terms) if terms is not None else None,
                    tuple((s[0], s[1]) for s in spans) if spans is not None else None,
                )
            )
        review_as: ReviewAs = evaluation.review_as  # type: ignore[assignment]
        data = {"name": "server", **evaluate(labelled, predictions, _info(evaluation), review_as).to_dict()}
    evaluation.report = json.dumps(data, ensure_ascii=False)
    _save(evaluation, services)
    return data


def headline(evaluation: Evaluation) -> str:
    """One line for the list of past evaluations."""
    if evaluation.report is None:
        return ""
    report = json.loads(evaluation.report)
    if evaluation.kind == "audit":
        return text("evals.consistency_headline", rate=f"{100 * report['consistency_rate']:.1f}%")
    overall = report["overall"]

    def pct(value: float | None) -> str:
        return "–" if value is None else f"{100 * value:.1f}%"

    return f"P {pct(overall['precision'])} · R {pct(overall['recall'])} · F1 {pct(overall['f1'])}"
