"""Value-sensitive deferral for one site: its calibration, its threshold τ, and what its moderators taught it.

The engine decides with the server's global τ and keeps the label it would have given (`proposed_label`)
when that τ deferred it. A site then applies its own calibration and τ on top (`web.shown.effective`), so
changing a site's settings needs no new analysis. The site page (`site_report`) turns the site's reviewed decisions
into engine `Outcome`s, fits a calibration, draws V(τ) over the calibrated confidences and proposes the τ
with the highest value; `apply` stores the pair. The maths is in engine/deferral.py; docs/deferral.md
explains it and this page.

Blocking (SQLAlchemy): routes call the database functions in a thread.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass

from markupsafe import Markup
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from engine.deferral import (
    DeferralError,
    Outcome,
    Platt,
    Temperature,
    Values,
    choose_threshold,
    expected_calibration_error,
    fit_platt,
    fit_temperature,
    reliability,
    value_curve,
)
from web.charts import line_chart
from web.models import DecisionRecord, ModeratorDecision, Site, WidgetResult
from web.sites import Sites

Calibration = Platt | Temperature
LABELS = ("flagged", "not_flagged")
# The engine and this module word a deferral the same way; an older deferral reason is replaced, not repeated.
DEFERRED_PREFIX = "deferred: confidence "


def _identity(confidence: float) -> float:
    return confidence


# -- calibration stored on the site ------------------------------------------------------------
def parse_calibration(text: str) -> Calibration | None:
    """The calibration stored in `Site.calibration` (JSON), or None for an empty string (uncalibrated)."""
    if not text.strip():
        return None
    try:
        data = json.loads(text)
        method = data["method"]
        if method == "platt":
            a, b = float(data["a"]), float(data["b"])
            # τ is a lower bound on the calibrated confidence: that only works for a scale that grows with it
            if not (math.isfinite(a) and math.isfinite(b) and a < 0):
                raise ValueError(f"a must be negative and a, b finite, got a={a}, b={b}")
            return Platt(a=a, b=b)
        if method == "temperature":
            t = float(data["t"])
            if not (math.isfinite(t) and t > 0):
                raise ValueError(t)
            return Temperature(t=t)
    except (ValueError, TypeError, KeyError) as error:
        raise DeferralError(
            f"the site's calibration {text!r} cannot be read ({error!r}); expected"
            ' {"method": "platt", "a": A, "b": B} or {"method": "temperature", "t": T}, or nothing'
        ) from error
    raise DeferralError(f"unknown calibration method {method!r}; accepted: platt, temperature")


def calibration_json(calibration: Calibration | None) -> str:
    """The JSON text for `Site.calibration`; empty for no calibration."""
    if calibration is None:
        return ""
    if isinstance(calibration, Platt):
        return json.dumps({"method": "platt", "a": calibration.a, "b": calibration.b})
    return json.dumps({"method": "temperature", "t": calibration.t})


def describe(calibration: Calibration | None) -> str:
    """A short human description of a calibration, for the site page."""
    if calibration is None:
        return "none (confidences are used as they are)"
    if isinstance(calibration, Platt):
        return f"Platt scaling (a = {calibration.a:.3f}, b = {calibration.b:.3f})"
    return f"temperature scaling (T = {calibration.t:.3f})"


def calibration_of(site: Site) -> Callable[[float], float]:
    """The function from a raw confidence to the calibrated one that the site's τ is compared with."""
    return parse_calibration(site.calibration) or _identity


@dataclass(frozen=True)
class ValueField:
    """One of a site's values as the settings form shows it: the Site column, its default and why."""

    name: str  # the Site column and the form field
    outcome: str
    default: float
    reason: str


_DEFAULTS = Values()
VALUE_FIELDS: tuple[ValueField, ...] = (
    ValueField("value_tp", "V_tp: a hateful post is flagged", _DEFAULTS.tp, "the widget did its job"),
    ValueField("value_tn", "V_tn: a harmless post is left alone", _DEFAULTS.tn, "the widget stayed out of the way"),
    ValueField(
        "value_fp",
        "V_fp: a harmless post is flagged",
        _DEFAULTS.fp,
        "the author is accused in public, and readers learn to ignore the flags",
    ),
    ValueField(
        "value_fn",
        "V_fn: a hateful post is missed",
        _DEFAULTS.fn,
        "readers are hurt, though a report or a moderator can still catch it",
    ),
    ValueField(
        "value_r",
        "V_r: a moderator decides instead",
        _DEFAULTS.r,
        "a moderator's time and a short wait, for an outcome that is almost always right",
    ),
)


def values_of(site: Site) -> Values:
    return Values(tp=site.value_tp, tn=site.value_tn, fp=site.value_fp, fn=site.value_fn, r=site.value_r)


# -- what the review queue defers -------------------------------------------------------------
def raw_cutoff(site: Site) -> float:
    """The raw confidence below which the site defers: `c < raw_cutoff(site)` exactly when
    `calibration_of(site)(c) < site.threshold`, for every confidence c from 0 to 1.

    Both calibrations increase with the confidence, so the cutoff is the smallest confidence whose
    calibrated value reaches τ. It is found by bisection on the very function the widget applies, which
    keeps the two in agreement to the last bit where a closed-form inverse could round the other way.
    0 means nothing is deferred; a number just above 1 means everything is.
    """
    calibrate = calibration_of(site)
    tau = site.threshold
    if calibrate is _identity:
        return tau
    if calibrate(0.0) >= tau:
        return 0.0
    if calibrate(1.0) < tau:
        return math.nextafter(1.0, 2.0)
    low, high = 0.0, 1.0  # calibrate(low) < tau <= calibrate(high)
    while True:
        middle = (low + high) / 2
        if middle in (low, high):  # adjacent floating-point numbers: high is the smallest that reaches τ
            return high
        if calibrate(middle) < tau:
            low = middle
        else:
            high = middle


# -- what moderators decided ---------------------------------------------------------------------
@dataclass(frozen=True)
class Reviewed:
    """A site's decisions that moderators reviewed, as engine outcomes, and how many could not be used."""

    outcomes: tuple[Outcome, ...]
    undetermined: int  # reviewed, but the engine had no label of its own (an undetermined stage)


def reviewed(engine: Engine, site_key: str) -> Reviewed:
    """Every analysis of the site's widget that a moderator decided, paired with the newest decision."""
    with Session(engine) as session:
        truth: dict[str, str] = {}
        decided = (
            select(ModeratorDecision.analysis_id, ModeratorDecision.label)
            .join(WidgetResult, col(WidgetResult.analysis_id) == col(ModeratorDecision.analysis_id))
            .where(col(WidgetResult.site_key) == site_key)
            .order_by(col(ModeratorDecision.created_at), col(ModeratorDecision.id))
        )
        for analysis_id, label in session.exec(decided):
            truth[analysis_id] = label  # in time order, so the newest decision is the one kept
        automatic = (
            select(DecisionRecord)
            .join(WidgetResult, col(WidgetResult.analysis_id) == col(DecisionRecord.analysis_id))
            .where(col(WidgetResult.site_key) == site_key)
            .where(col(DecisionRecord.analysis_id).in_(select(ModeratorDecision.analysis_id)))
            .order_by(col(DecisionRecord.analysis_id))
        )
        rows = list(session.exec(automatic).unique())
    outcomes, undetermined = [], 0
    for row in rows:
        label = row.proposed_label or row.label
        if label not in LABELS:
            undetermined += 1
            continue
        outcomes.append(Outcome(row.confidence, label == "flagged", truth[row.analysis_id] == "flagged"))
    return Reviewed(tuple(outcomes), undetermined)


def reviewed_outcomes(engine: Engine, site_key: str) -> list[Outcome]:
    """The site's reviewed decisions as engine outcomes; those the engine could not label are left out."""
    return list(reviewed(engine, site_key).outcomes)


# -- the site page -------------------------------------------------------------------------------
Bins = tuple[tuple[float, float, int], ...]


@dataclass(frozen=True)
class SiteDeferral:
    """Everything the site page shows about deferral, computed from the site's reviewed decisions.

    The curve, the chosen τ and the "after" numbers use the confidences as `calibration` (fitted now)
    maps them, since that is what the widget compares τ with once the pair is applied.
    """

    values: Values
    current_tau: float
    current_calibration: Calibration | None
    reviewed: int
    undetermined: int
    calibration: Calibration | None
    calibration_note: str
    curve: tuple[tuple[float, float], ...]
    chosen: tuple[float, float] | None  # (τ, V(τ))
    chosen_cutoff: float | None  # the raw confidence below which the chosen pair defers
    current_cutoff: float
    refusal: str | None  # why no τ was chosen
    ece_before: float | None
    ece_after: float | None
    bins_before: Bins
    bins_after: Bins

    @property
    def method(self) -> str:
        if self.calibration is None:
            return "none"
        return "platt" if isinstance(self.calibration, Platt) else "temperature"


def fit_calibration(outcomes: tuple[Outcome, ...] | list[Outcome]) -> tuple[Calibration | None, str]:
    """(calibration, why this one) fitted on whether each automatic decision was right.

    Platt scaling is preferred; when it comes out decreasing (the surer the engine, the more often
    wrong) a τ on it would defer the wrong end, so temperature scaling, which always increases, is used.
    """
    if not outcomes:
        return None, "no reviewed decisions yet, so nothing to fit"
    confidences = [o.confidence for o in outcomes]
    right = [o.predicted == o.actual for o in outcomes]
    if all(right) or not any(right):
        verdict = "right" if right[0] else "wrong"
        return None, f"every reviewed decision was {verdict}; a fit needs both right and wrong ones"
    platt = fit_platt(confidences, right)
    if platt.a < 0:
        return platt, "Platt scaling, fitted on both right and wrong decisions"
    return (
        fit_temperature(confidences, right),
        "temperature scaling: Platt scaling came out decreasing (higher confidence was less often right),"
        " which a threshold cannot use",
    )


def _pair(tau: float, calibration: Calibration | None) -> Site:
    """A site that is only a τ and a calibration, to ask `raw_cutoff` about a pair not yet stored."""
    return Site(key="", name="", threshold=tau, calibration=calibration_json(calibration))


def site_report(engine: Engine, site: Site) -> SiteDeferral:
    values = values_of(site)
    found = reviewed(engine, site.key)
    outcomes = found.outcomes
    calibration, note = fit_calibration(outcomes)
    calibrate = calibration or _identity
    scaled = [Outcome(calibrate(o.confidence), o.predicted, o.actual) for o in outcomes]
    chosen: tuple[float, float] | None = None
    refusal: str | None = None
    try:
        chosen = choose_threshold(scaled, values)
    except DeferralError as error:
        refusal = error.message
    right = [o.predicted == o.actual for o in outcomes]
    raw = [o.confidence for o in outcomes]
    after = [o.confidence for o in scaled]
    return SiteDeferral(
        values=values,
        current_tau=site.threshold,
        current_calibration=parse_calibration(site.calibration),
        reviewed=len(outcomes),
        undetermined=found.undetermined,
        calibration=calibration,
        calibration_note=note,
        curve=tuple(value_curve(scaled, values)) if scaled else (),
        chosen=chosen,
        chosen_cutoff=raw_cutoff(_pair(chosen[0], calibration)) if chosen else None,
        current_cutoff=raw_cutoff(site),
        refusal=refusal,
        ece_before=expected_calibration_error(raw, right) if outcomes else None,
        ece_after=expected_calibration_error(after, right) if outcomes else None,
        bins_before=tuple(reliability(raw, right)) if outcomes else (),
        bins_after=tuple(reliability(after, right)) if outcomes else (),
    )


# -- saving ----------------------------------------------------------------------------------------
def apply(sites: Sites, site: Site, tau: float, calibration: Calibration | None) -> Site:
    """Store τ and the calibration it was chosen with, together: one without the other means another τ."""
    if isinstance(tau, bool) or not (isinstance(tau, int | float) and 0.0 <= tau <= 1.0):
        raise DeferralError(f"the threshold τ must be a number from 0 to 1, got {tau!r}")
    text = calibration_json(calibration)
    parse_calibration(text)  # refuses a calibration the widget could not use (a decreasing Platt scale)
    site.threshold = float(tau)
    site.calibration = text
    return sites.save(site)


def save_values(sites: Sites, site: Site, values: Values) -> Site:
    """Store what each outcome is worth to the site; `Values` has already refused impossible ones."""
    site.value_tp, site.value_tn, site.value_fp, site.value_fn, site.value_r = (
        values.tp,
        values.tn,
        values.fp,
        values.fn,
        values.r,
    )
    return sites.save(site)


# -- charts for the site page ------------------------------------------------------------------------
def value_chart(report: SiteDeferral) -> Markup:
    """V(τ) over the candidate τs, the chosen τ as the marker and the site's current τ as a vertical line."""
    series: list[tuple[str, list[tuple[float, float]]]] = [("V(τ)", list(report.curve))]
    if report.curve:
        values = [v for _, v in report.curve]
        low, high = min(values), max(values)
        # line_chart has one marker, which the proposal takes; the current τ is drawn as a two-point series
        current = report.current_tau
        series.append((f"current τ = {current:.2f}", [(current, low), (current, high)]))
    marker = (report.chosen[0], f"chosen τ = {report.chosen[0]:.2f}") if report.chosen else None
    return line_chart(series, title="Value of each threshold, V(τ)", x_label="τ", y_label="V(τ)", marker=marker)


def calibration_chart(report: SiteDeferral) -> Markup:
    """Reliability: per confidence bin, the mean confidence against the share of decisions that were right."""
    series: list[tuple[str, list[tuple[float, float]]]] = [
        ("raw confidence", [(mean, observed) for mean, observed, _ in report.bins_before]),
    ]
    if report.calibration is not None:
        series.append(("calibrated", [(mean, observed) for mean, observed, _ in report.bins_after]))
    if report.bins_before:
        series.append(("perfectly calibrated", [(0.0, 0.0), (1.0, 1.0)]))
    return line_chart(
        series, title="Calibration (reliability)", x_label="mean confidence in the bin", y_label="share right"
    )
