"""How good the automatic decisions are, measured against what moderators decided; and the decisions as a CSV.

Every number is a share with its n (`Rate`), computed by the database with GROUP BY and conditional sums, so
the page costs a handful of aggregate queries whatever the number of analyses. docs/quality.md says what each
number means. The moderator's label of an analysis is its newest `ModeratorDecision` (highest id, the order in
which they were written); the automatic label is the stored decision's label, or the label it would have had
(`proposed_label`) when the site's threshold τ deferred it.

Blocking (SQLAlchemy): routes call `Quality` in a thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVarTuple

from sqlalchemy import ColumnElement, Select, and_, case, func, select
from sqlalchemy.engine import Engine

from engine.errors import UneraseError
from web.models import (
    AnalysisRecord,
    DecisionRecord,
    HitRecord,
    ModeratorDecision,
    Precedent,
    VerdictRecord,
    WidgetResult,
    iso,
    utcnow,
)

PERIODS: tuple[str, ...] = ("7", "30", "all")  # days; "all": no limit
BINS = 10  # calibration bins of width 0.1, as in engine.deferral.reliability
MAX_TERMS = 200  # the page lists the terms with the most judged hits first
CSV_CHUNK = 500

Columns = TypeVarTuple("Columns")

_analysis = AnalysisRecord.__table__  # type: ignore[attr-defined]
_decision = DecisionRecord.__table__  # type: ignore[attr-defined]
_moderator = ModeratorDecision.__table__  # type: ignore[attr-defined]
_precedent = Precedent.__table__  # type: ignore[attr-defined]
_verdict = VerdictRecord.__table__  # type: ignore[attr-defined]
_hit = HitRecord.__table__  # type: ignore[attr-defined]
_widget = WidgetResult.__table__  # type: ignore[attr-defined]


class QualityFilterError(UneraseError):
    code = "invalid-quality-filter"


@dataclass(frozen=True)
class QualityFilter:
    """Which decisions count: one site (by widget key), one language, and the last 7 or 30 days or all."""

    site: str | None = None
    language: str | None = None
    period: str = "all"

    @classmethod
    def parse(cls, site: str | None, language: str | None, period: str | None) -> QualityFilter:
        period = period or "all"
        if period not in PERIODS:
            raise QualityFilterError(f"unknown period '{period}'; accepted: 7, 30 (days) or all")
        return cls(site or None, language or None, period)

    def since(self, now: datetime | None = None) -> datetime | None:
        """The start of the period in UTC; None for all time."""
        if self.period == "all":
            return None
        return (now or utcnow()).astimezone(UTC) - timedelta(days=int(self.period))

    def query(self) -> dict[str, str]:
        """The filter as query-string values (defaults left out), for links that keep it."""
        values = {"site": self.site, "language": self.language, "period": None if self.period == "all" else self.period}
        return {name: value for name, value in values.items() if value}


@dataclass(frozen=True)
class Rate:
    """`part` of `n`; no value when nothing was counted, so an empty state is never shown as 0 %."""

    part: int
    n: int

    @property
    def value(self) -> float | None:
        return self.part / self.n if self.n else None

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.part, "n": self.n, "value": self.value}


@dataclass(frozen=True)
class TermPrecision:
    term_id: str
    term: str
    precision: Rate  # hits the engine called contentious that a moderator also called contentious


@dataclass(frozen=True)
class LanguagePrecision:
    language: str
    precision: Rate  # automatically flagged analyses that the moderator kept flagged


@dataclass(frozen=True)
class CalibrationBin:
    mean_confidence: float
    agreement: float  # share of the bin's decisions the moderator agreed with
    count: int


@dataclass(frozen=True)
class QualityReport:
    decisions: int  # analyses with a moderator decision
    overturns: Rate  # of those with an automatic label to compare with
    from_review: int  # decided by a moderator with no automatic label (needs_review, nothing proposed)
    deferrals: Rate  # stored automatic decisions that were needs_review
    spot_checks_drawn: int
    spot_checks: Rate  # reviewed spot checks the moderator agreed with
    terms: tuple[TermPrecision, ...]
    languages: tuple[LanguagePrecision, ...]
    calibration: tuple[CalibrationBin, ...]

    @property
    def ece(self) -> float | None:
        """Expected calibration error over the bins: Σ count/total · |mean confidence − agreement|."""
        total = sum(b.count for b in self.calibration)
        if not total:
            return None
        return sum(b.count / total * abs(b.mean_confidence - b.agreement) for b in self.calibration)


@dataclass(frozen=True)
class DecisionRow:
    """One moderator decision as the CSV export writes it."""

    analysis_id: str
    decided_at: str
    site: str
    language: str
    automatic_label: str
    proposed_label: str
    automatic_confidence: str
    moderator_label: str
    overturned: str  # yes, no, or "review" when there was no automatic label to overturn
    moderator: str
    explanation: str
    note: str

    @staticmethod
    def columns() -> tuple[str, ...]:
        return tuple(DecisionRow.__dataclass_fields__)

    def cells(self) -> list[str]:
        return [str(getattr(self, name)) for name in self.columns()]


def _automatic() -> ColumnElement[Any]:
    # a deferred decision is judged by the label it would have had; needs_review with nothing proposed has none
    return case((_decision.c.label == "needs_review", _decision.c.proposed_label), else_=_decision.c.label)


def _count(condition: ColumnElement[bool]) -> ColumnElement[int]:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _bin(confidence: ColumnElement[float]) -> ColumnElement[int]:
    """The calibration bin of a confidence: k for [k/BINS, (k+1)/BINS), and 1.0 in the last bin.

    Comparisons rather than floor(), which SQLite only has when compiled with its maths functions.
    """
    return case(*[(confidence < (k + 1) / BINS, k) for k in range(BINS - 1)], else_=BINS - 1)


def _scope(query: Select[*Columns], filters: QualityFilter, analysis_id: Any, moment: Any) -> Select[*Columns]:
    """The query narrowed to the filter; `moment` is the time the period applies to. Needs `analysis` joined."""
    if filters.language:
        query = query.where(_analysis.c.language == filters.language)
    if filters.site:
        # IN, not a correlated EXISTS: widget_result has no index on analysis_id, and an uncorrelated subquery
        # is computed once (SQLite gives it a temporary index; PostgreSQL a hash semi-join)
        shown_on = select(_widget.c.analysis_id).where(_widget.c.site_key == filters.site)
        query = query.where(analysis_id.in_(shown_on))
    since = filters.since()
    if since is not None:
        query = query.where(moment >= since)
    return query


def _moderated(filters: QualityFilter, *columns: Any) -> Select[Any]:
    """Analyses by their newest moderator decision (within the period), with the automatic decision if any."""
    newest = select(func.max(_moderator.c.id).label("id")).group_by(_moderator.c.analysis_id).subquery("newest")
    joined = (
        _moderator.join(newest, _moderator.c.id == newest.c.id)
        .join(_analysis, _analysis.c.id == _moderator.c.analysis_id)
        .outerjoin(_decision, _decision.c.analysis_id == _moderator.c.analysis_id)
    )
    query = select(*columns).select_from(joined)
    return _scope(query, filters, _moderator.c.analysis_id, _moderator.c.created_at)


def _overturned(automatic: str | None, moderator: str) -> str:
    if automatic is None:
        return "review"
    return "yes" if automatic != moderator else "no"


class Quality:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def report(self, filters: QualityFilter = QualityFilter()) -> QualityReport:
        automatic = _automatic()
        agreed = automatic == _moderator.c.label
        spot = _analysis.c.spot_check.is_(True)
        with self.engine.connect() as db:
            decided, from_review, compared, overturned, spot_reviewed, spot_agreed = db.execute(
                _moderated(
                    filters,
                    func.count(),
                    _count(automatic.is_(None)),
                    _count(automatic.is_not(None)),
                    _count(automatic != _moderator.c.label),
                    _count(and_(spot, automatic.is_not(None))),
                    _count(and_(spot, agreed)),
                )
            ).one()
            stored, deferred, drawn = db.execute(
                _scope(
                    select(func.count(), _count(_decision.c.label == "needs_review"), _count(spot)).select_from(
                        _decision.join(_analysis, _analysis.c.id == _decision.c.analysis_id)
                    ),
                    filters,
                    _decision.c.analysis_id,
                    _analysis.c.created_at,
                )
            ).one()
            languages = db.execute(
                _moderated(filters, _analysis.c.language, func.count(), _count(_moderator.c.label == "flagged"))
                .where(automatic == "flagged")
                .group_by(_analysis.c.language)
                .order_by(_analysis.c.language)
            ).all()
            terms = db.execute(self._term_query(filters)).all()
            bins = db.execute(self._calibration_query(filters)).all()
        return QualityReport(
            decisions=int(decided),
            overturns=Rate(int(overturned), int(compared)),
            from_review=int(from_review),
            deferrals=Rate(int(deferred), int(stored)),
            spot_checks_drawn=int(drawn),
            spot_checks=Rate(int(spot_agreed), int(spot_reviewed)),
            terms=tuple(TermPrecision(t, term, Rate(int(yes), int(n))) for t, term, n, yes in terms),
            languages=tuple(LanguagePrecision(lang or "unknown", Rate(int(yes), int(n))) for lang, n, yes in languages),
            calibration=tuple(CalibrationBin(float(total) / n, int(yes) / n, int(n)) for _, n, total, yes in bins),
        )

    @staticmethod
    def _term_query(filters: QualityFilter) -> Select[Any]:
        """Per term: hits the engine called contentious and a moderator judged (newest verdict per hit)."""
        p = _precedent
        latest = select(func.max(p.c.id).label("id")).group_by(p.c.analysis_id, p.c.hit_id).subquery("latest")
        joined = (
            p.join(latest, p.c.id == latest.c.id)
            .join(_verdict, and_(_verdict.c.analysis_id == p.c.analysis_id, _verdict.c.hit_id == p.c.hit_id))
            .join(_analysis, _analysis.c.id == p.c.analysis_id)
            .outerjoin(_hit, and_(_hit.c.analysis_id == p.c.analysis_id, _hit.c.hit_id == p.c.hit_id))
        )
        query = (
            select(
                p.c.term_id,
                func.min(func.coalesce(_hit.c.term, p.c.surface)),
                func.count(),
                _count(p.c.verdict == "contentious"),
            )
            .select_from(joined)
            .where(_verdict.c.status == "contentious")
            .group_by(p.c.term_id)
            .order_by(func.count().desc(), p.c.term_id)
            .limit(MAX_TERMS)
        )
        return _scope(query, filters, p.c.analysis_id, p.c.created_at)

    @staticmethod
    def _calibration_query(filters: QualityFilter) -> Select[Any]:
        """Per confidence bin: decisions, their summed confidence, and how many the moderator agreed with."""
        automatic = _automatic()
        pairs = (
            _moderated(
                filters,
                _bin(_decision.c.confidence).label("bin"),
                _decision.c.confidence.label("confidence"),
                case((automatic == _moderator.c.label, 1), else_=0).label("agreed"),
            )
            .where(automatic.is_not(None))
            .subquery("pairs")
        )
        # grouped in an outer query: PostgreSQL does not see two renderings of the CASE as one expression
        return (
            select(pairs.c.bin, func.count(), func.sum(pairs.c.confidence), func.sum(pairs.c.agreed))
            .group_by(pairs.c.bin)
            .order_by(pairs.c.bin)
        )

    def decision_rows(self, filters: QualityFilter = QualityFilter()) -> Iterator[DecisionRow]:
        """Every moderator decision (older ones too), oldest first, read in chunks so none sits in memory."""
        m = _moderator
        # one site per analysis, joined from a grouped subquery for the same reason as in _scope
        sites = (
            select(_widget.c.analysis_id, func.min(_widget.c.site_key).label("site_key"))
            .group_by(_widget.c.analysis_id)
            .subquery("sites")
        )
        columns = (
            m.c.id,
            m.c.analysis_id,
            m.c.created_at,
            sites.c.site_key,
            _analysis.c.language,
            _decision.c.label,
            _decision.c.proposed_label,
            _decision.c.confidence,
            m.c.label,
            m.c.moderator,
            m.c.explanation,
            m.c.note,
        )
        joined = (
            m.join(_analysis, _analysis.c.id == m.c.analysis_id)
            .outerjoin(_decision, _decision.c.analysis_id == m.c.analysis_id)
            .outerjoin(sites, sites.c.analysis_id == m.c.analysis_id)
        )
        base = _scope(select(*columns).select_from(joined), filters, m.c.analysis_id, m.c.created_at)
        last = -1
        while True:
            with self.engine.connect() as db:
                rows = db.execute(base.where(m.c.id > last).order_by(m.c.id).limit(CSV_CHUNK)).all()
            for row in rows:
                yield _decision_row(tuple(row))
            if len(rows) < CSV_CHUNK:
                return
            last = rows[-1][0]


def _decision_row(row: tuple[Any, ...]) -> DecisionRow:
    """A CSV row from (id, analysis id, decided at, site, language, label, proposed label, confidence,
    moderator's label, moderator, explanation, note)."""
    _, analysis_id, decided_at, site, language, label, proposed, confidence, moderator_label, *rest = row
    moderator, explanation, note = rest
    automatic = proposed if label == "needs_review" else label
    return DecisionRow(
        analysis_id=analysis_id,
        decided_at=iso(decided_at),
        site=site or "",
        language=language or "",
        automatic_label=label or "",
        proposed_label=proposed or "",
        automatic_confidence="" if confidence is None else f"{confidence:.3f}",
        moderator_label=moderator_label,
        overturned=_overturned(automatic, moderator_label),
        moderator=moderator,
        explanation=explanation or "",
        note=note,
    )
