"""How well a configuration decides a labelled sample: run it, then count (`unerase eval`).

The figures are the usual ones — accuracy, precision, recall, F1 over the hateful class — but a
decision here has three values, and what `needs_review` means for them is a choice the reader must
make, so it is explicit (`review_as`):

- `positive`: a deferred text counts as flagged (what moderators end up looking at);
- `negative`: a deferred text counts as not flagged (what happens if nobody ever reviews it);
- `separate`: deferred texts are set aside; the figures describe the automatic decisions only, and the
  deferral rate says how much was set aside;
- `correct`: a deferred text counts as decided as its label says, i.e. a moderator reviewed it and got
  it right — the best the site can reach with its reviewers, an upper bound.

Rows whose analysis failed are never counted as right or wrong; they are listed as errors.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.analysis import Analyzer
from engine.errors import UneraseError
from engine.events import AnalysisStarted, Decision, HitFound, Verdict
from engine.labelled import LabelledRow
from engine.scope import Scope

ReviewAs = Literal["positive", "negative", "separate", "correct"]
REVIEW_AS: tuple[ReviewAs, ...] = ("positive", "negative", "separate", "correct")
OUTCOMES = ("flagged", "not_flagged", "needs_review", "error")


@dataclass(frozen=True)
class HitOutcome:
    term: str  # the term's literal
    term_id: str
    issue_id: str
    surface: str
    start: int
    end: int
    status: str  # contentious / neutral / undetermined, or "" when no verdict came


@dataclass(frozen=True)
class Prediction:
    label: str  # one of OUTCOMES
    confidence: float = 0.0
    language: str = ""
    hits: tuple[HitOutcome, ...] = ()
    reasons: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class RunInfo:
    """The configuration that produced the predictions, as the analyses reported it."""

    vocabulary_version: str = ""
    prompt_version: str = ""
    models: tuple[str, ...] = ()
    mode: str = ""
    threshold: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "vocabulary_version": self.vocabulary_version,
            "prompt_version": self.prompt_version,
            "models": list(self.models) or ["none"],
            "mode": self.mode,
            "threshold": self.threshold,
        }


# --- running -----------------------------------------------------------------------------------------


async def predict(
    analyzer: Analyzer,
    texts: Sequence[tuple[str, str | None]],
    *,
    mode: str | None = None,
    scope: Scope | None = None,
    concurrency: int = 4,
    progress: Callable[[], None] | None = None,
) -> tuple[list[Prediction], RunInfo]:
    """One prediction per (text, language), in order; at most `concurrency` analyses at once."""
    if concurrency < 1:
        raise UneraseError(f"concurrency {concurrency} is not accepted; give 1 or more")
    slots = asyncio.Semaphore(concurrency)
    infos: list[AnalysisStarted] = []

    async def one(text: str, lang: str | None) -> Prediction:
        async with slots:
            try:
                prediction = await _predict_one(analyzer, text, lang, mode, scope, infos)
            except UneraseError as exc:
                prediction = Prediction("error", error=f"{exc.code}: {exc.message}")
        if progress is not None:
            progress()
        return prediction

    predictions = await asyncio.gather(*(one(text, lang) for text, lang in texts))
    modes = sorted({i.mode for i in infos})
    first = infos[0] if infos else None
    info = RunInfo(
        first.vocabulary_version if first else analyzer.detector.vocabulary.version,
        first.prompt_version if first else analyzer.prompts.version,
        tuple(sorted({m for i in infos for m in i.models})),
        "/".join(modes) or (mode or analyzer.config.mode),
        analyzer.config.threshold,
    )
    return list(predictions), info


async def _predict_one(
    analyzer: Analyzer,
    text: str,
    lang: str | None,
    mode: str | None,
    scope: Scope | None,
    infos: list[AnalysisStarted],
) -> Prediction:
    hits: dict[str, HitFound] = {}
    verdicts: dict[str, str] = {}
    decision: Decision | None = None
    language = ""
    async for event in analyzer.analyze(text, lang, mode, scope=scope):
        if isinstance(event, AnalysisStarted):
            language = event.language
            if not infos or event.mode != infos[0].mode or event.models != infos[-1].models:
                infos.append(event)
        elif isinstance(event, HitFound):
            hits[event.hit.id] = event
        elif isinstance(event, Verdict):
            verdicts[event.hit_id] = event.status
        elif isinstance(event, Decision):
            decision = event
    if decision is None:
        return Prediction("error", language=language, error="the analysis ended without a decision")
    outcomes = tuple(
        HitOutcome(
            h.hit.term.literal,
            h.hit.term.id,
            h.hit.issue.id,
            h.hit.surface,
            h.hit.start,
            h.hit.end,
            verdicts.get(hit_id, ""),
        )
        for hit_id, h in hits.items()
    )
    return Prediction(decision.label, decision.confidence, language, outcomes, decision.reasons)


# --- counting ----------------------------------------------------------------------------------------


def _ratio(top: int, bottom: int) -> float | None:
    return top / bottom if bottom else None


@dataclass(frozen=True)
class Metrics:
    """The confusion table (gold label × outcome) and the figures derived from it under `review_as`."""

    review_as: ReviewAs
    table: dict[str, dict[str, int]]  # {"positive"|"negative": {outcome: count}}

    @classmethod
    def count(cls, pairs: Iterable[tuple[bool, str]], review_as: ReviewAs) -> Metrics:
        table = {gold: dict.fromkeys(OUTCOMES, 0) for gold in ("positive", "negative")}
        for positive, outcome in pairs:
            table["positive" if positive else "negative"][outcome] += 1
        return cls(review_as, table)

    def _cells(self) -> tuple[int, int, int, int]:
        pos, neg = self.table["positive"], self.table["negative"]
        tp, fn, fp, tn = pos["flagged"], pos["not_flagged"], neg["flagged"], neg["not_flagged"]
        review_pos, review_neg = pos["needs_review"], neg["needs_review"]
        if self.review_as == "positive":
            return tp + review_pos, fn, fp + review_neg, tn
        if self.review_as == "negative":
            return tp, fn + review_pos, fp, tn + review_neg
        if self.review_as == "correct":
            return tp + review_pos, fn, fp, tn + review_neg
        return tp, fn, fp, tn

    @property
    def rows(self) -> int:
        return sum(sum(row.values()) for row in self.table.values())

    @property
    def errors(self) -> int:
        return sum(row["error"] for row in self.table.values())

    @property
    def deferred(self) -> int:
        return sum(row["needs_review"] for row in self.table.values())

    @property
    def deferral_rate(self) -> float | None:
        return _ratio(self.deferred, self.rows - self.errors)

    @property
    def counted(self) -> int:
        return sum(self._cells())

    @property
    def accuracy(self) -> float | None:
        tp, _fn, _fp, tn = self._cells()
        return _ratio(tp + tn, self.counted)

    @property
    def precision(self) -> float | None:
        tp, _fn, fp, _tn = self._cells()
        return _ratio(tp, tp + fp)

    @property
    def recall(self) -> float | None:
        tp, fn, _fp, _tn = self._cells()
        return _ratio(tp, tp + fn)

    @property
    def f1(self) -> float | None:
        tp, fn, fp, _tn = self._cells()
        return _ratio(2 * tp, 2 * tp + fp + fn)

    def to_dict(self) -> dict[str, Any]:
        tp, fn, fp, tn = self._cells()
        return {
            "rows": self.rows,
            "counted": self.counted,
            "errors": self.errors,
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "deferral_rate": self.deferral_rate,
            "tp": tp,
            "fp": fp,
            "fn": fn,
            "tn": tn,
            "table": {gold: dict(row) for gold, row in self.table.items()},
        }


@dataclass(frozen=True)
class TermStat:
    """How often the pipeline called a term contentious, and how often the labels agreed."""

    term: str
    hits: int = 0
    contentious: int = 0
    correct: int = 0
    undetermined: int = 0
    missed: int = 0  # labelled contentious uses of the term the pipeline did not call contentious

    @property
    def precision(self) -> float | None:
        return _ratio(self.correct, self.contentious)

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.term,
            "hits": self.hits,
            "contentious": self.contentious,
            "correct": self.correct,
            "undetermined": self.undetermined,
            "missed": self.missed,
            "precision": self.precision,
        }


@dataclass(frozen=True)
class ErrorExample:
    line: int
    text: str
    gold: str  # "positive" / "negative"
    outcome: str
    confidence: float
    terms: tuple[str, ...]
    reasons: tuple[str, ...]
    group: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "text": self.text,
            "gold": self.gold,
            "outcome": self.outcome,
            "confidence": round(self.confidence, 3),
            "terms": list(self.terms),
            "reasons": list(self.reasons),
            "group": self.group,
        }


@dataclass(frozen=True)
class EvaluationReport:
    info: RunInfo
    overall: Metrics
    by_group: dict[str, Metrics]
    by_language: dict[str, Metrics]
    terms: tuple[TermStat, ...] | None  # None: the file has no term or span labels
    false_positives: tuple[ErrorExample, ...]
    false_negatives: tuple[ErrorExample, ...]
    failures: tuple[tuple[int, str], ...] = field(default=())  # (line, message) of rows whose analysis failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "configuration": self.info.to_dict(),
            "review_as": self.overall.review_as,
            "overall": self.overall.to_dict(),
            "by_group": {k: m.to_dict() for k, m in self.by_group.items()},
            "by_language": {k: m.to_dict() for k, m in self.by_language.items()},
            "terms": None if self.terms is None else [t.to_dict() for t in self.terms],
            "false_positives": [e.to_dict() for e in self.false_positives],
            "false_negatives": [e.to_dict() for e in self.false_negatives],
            "failures": [{"line": line, "message": message} for line, message in self.failures],
        }


def evaluate(
    rows: Sequence[LabelledRow],
    predictions: Sequence[Prediction],
    info: RunInfo,
    review_as: ReviewAs = "separate",
    *,
    worst: int = 10,
) -> EvaluationReport:
    """The report for predictions made on `rows` (same order)."""
    if review_as not in REVIEW_AS:
        raise UneraseError(f"--review-as {review_as!r} is not known; accepted: {', '.join(REVIEW_AS)}")
    if len(rows) != len(predictions):
        raise ValueError("one prediction per row is needed")
    pairs = list(zip(rows, predictions, strict=True))
    overall = Metrics.count(((r.positive, p.label) for r, p in pairs), review_as)
    by_group = _breakdown(pairs, lambda r, p: r.group, review_as)
    by_language = _breakdown(pairs, lambda r, p: r.lang or p.language or None, review_as)
    labelled_terms = any(r.terms is not None or r.spans is not None for r in rows)
    return EvaluationReport(
        info,
        overall,
        by_group,
        by_language,
        term_precision(pairs) if labelled_terms else None,
        _worst(pairs, positive=False, limit=worst),
        _worst(pairs, positive=True, limit=worst),
        tuple((r.line, p.error) for r, p in pairs if p.label == "error"),
    )


def _breakdown(
    pairs: Sequence[tuple[LabelledRow, Prediction]],
    key: Callable[[LabelledRow, Prediction], str | None],
    review_as: ReviewAs,
) -> dict[str, Metrics]:
    groups: dict[str, list[tuple[bool, str]]] = {}
    for row, prediction in pairs:
        value = key(row, prediction)
        if value is not None:
            groups.setdefault(value, []).append((row.positive, prediction.label))
    return {value: Metrics.count(groups[value], review_as) for value in sorted(groups)}


def _gold_match(hit: HitOutcome, row: LabelledRow) -> bool:
    names = {hit.term.casefold(), hit.surface.casefold(), hit.term_id.casefold(), hit.issue_id.casefold()}
    if row.terms is not None and any(t.casefold() in names for t in row.terms):
        return True
    return row.spans is not None and any(start < hit.end and hit.start < end for start, end in row.spans)


def term_precision(pairs: Sequence[tuple[LabelledRow, Prediction]]) -> tuple[TermStat, ...]:
    """Per term (by literal), over the rows that carry term or span labels; most frequent first."""
    stats: dict[str, dict[str, int]] = {}
    for row, prediction in pairs:
        if row.terms is None and row.spans is None:
            continue
        for hit in prediction.hits:
            counts = stats.setdefault(hit.term, dict.fromkeys(("hits", "contentious", "correct", "und", "missed"), 0))
            counts["hits"] += 1
            gold = _gold_match(hit, row)
            if hit.status == "contentious":
                counts["contentious"] += 1
                counts["correct"] += gold
            elif hit.status == "undetermined":
                counts["und"] += 1
            if gold and hit.status != "contentious":
                counts["missed"] += 1
    result = [
        TermStat(term, c["hits"], c["contentious"], c["correct"], c["und"], c["missed"]) for term, c in stats.items()
    ]
    return tuple(sorted(result, key=lambda t: (-t.hits, t.term)))


def _worst(pairs: Sequence[tuple[LabelledRow, Prediction]], *, positive: bool, limit: int) -> tuple[ErrorExample, ...]:
    """The most confident wrong automatic decisions: flags of negatives, or passes of positives."""
    wrong = "not_flagged" if positive else "flagged"
    found = [
        ErrorExample(
            row.line,
            row.text,
            "positive" if positive else "negative",
            prediction.label,
            prediction.confidence,
            tuple(h.term for h in prediction.hits),
            prediction.reasons,
            row.group,
        )
        for row, prediction in pairs
        if row.positive == positive and prediction.label == wrong
    ]
    found.sort(key=lambda e: (-e.confidence, e.line))
    return tuple(found[:limit])
