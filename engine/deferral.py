"""Value-sensitive deferral: when should unerase hand a decision to a moderator instead of asserting it?

A site gives every kind of outcome a value (a correct flag, a correct pass, a wrong flag, a missed
slur, and a moderator's review). From the automatic decisions that moderators have already reviewed,
this module computes V(τ) of PRODUCT.md step 5 for candidate confidence thresholds τ, picks the τ
with the highest value, and fits the calibration (Platt or temperature scaling) that makes the
confidences worth thresholding. docs/deferral.md explains how the formula is read, with a worked
example. Plain Python on purpose: the reviewed sets are small and the maths is a few sums.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from engine.errors import UneraseError

# Below this many reviewed decisions the best τ mostly reflects which few items happened to be
# reviewed, so the optimiser refuses rather than hand a site a threshold that is noise.
MIN_REVIEWED = 30

# Values closer than this are treated as equal, so a tie resolves to the lower τ even when two
# sums of the same numbers differ in their last bit.
_TIE_TOLERANCE = 1e-9

OutcomeType = Literal["tp", "tn", "fp", "fn"]
OUTCOME_TYPES: tuple[OutcomeType, ...] = ("tp", "tn", "fp", "fn")


class DeferralError(UneraseError):
    """Values, reviewed outcomes or calibration data that the deferral maths cannot use."""

    status = 422
    code = "invalid-deferral-input"


@dataclass(frozen=True)
class Outcome:
    """One automatic decision that a moderator has reviewed.

    `confidence` is the model's confidence in its own label, `predicted` whether it flagged the text
    and `actual` the moderator's truth (True = the text is hateful or contentious).
    """

    confidence: float
    predicted: bool
    actual: bool

    def __post_init__(self) -> None:
        if isinstance(self.confidence, bool) or not (
            isinstance(self.confidence, int | float) and 0.0 <= self.confidence <= 1.0
        ):
            raise DeferralError(f"confidence must be a number from 0 to 1, got {self.confidence!r}")

    @property
    def type(self) -> OutcomeType:
        if self.predicted:
            return "tp" if self.actual else "fp"
        return "fn" if self.actual else "tn"


@dataclass(frozen=True)
class Values:
    """What each outcome is worth to a site, in one arbitrary unit; docs/deferral.md gives the reasons.

    The defaults count a correct decision as +1, a wrongly flagged post as −4 (it accuses a person in
    public and costs their trust), a missed slur as −2 (it hurts readers, but a moderator or a report
    can still catch it) and a deferral as −0.5 (a moderator's time, and a short wait for the reader).
    """

    tp: float = 1.0
    tn: float = 1.0
    fp: float = -4.0
    fn: float = -2.0
    r: float = -0.5

    def __post_init__(self) -> None:
        for name in ("tp", "tn", "fp", "fn", "r"):
            number = getattr(self, name)
            if isinstance(number, bool) or not (isinstance(number, int | float) and math.isfinite(number)):
                raise DeferralError(f"the value V_{name} must be a finite number, got {number!r}")
        worst, best = min(self.tp, self.tn, self.fp, self.fn), max(self.tp, self.tn, self.fp, self.fn)
        # At or beyond either end the answer no longer depends on the data: a deferral worth at least
        # the best outcome defers everything, one worth at most the worst outcome never defers.
        if not worst < self.r < best:
            raise DeferralError(
                f"the deferral value V_r must lie strictly between the worst outcome value ({worst:g}) and the"
                f" best ({best:g}), got {self.r:g}"
            )

    def of(self, kind: OutcomeType) -> float:
        value: float = getattr(self, kind)
        return value


def value(outcomes: Sequence[Outcome], values: Values, tau: float) -> float:
    """V(τ) = Σ_p (V_p − V_r)·F_p(τ) + Σ_p (V_r − V_p)·F^r_p(τ) over p ∈ {tp, tn, fp, fn}.

    An outcome is accepted when its confidence is at least τ and deferred otherwise. F_p(τ) is the
    share of *all* outcomes that are of type p and accepted, F^r_p(τ) the share that are of type p and
    deferred. Each accepted item thus adds V_p − V_r (what acting alone gains over asking a moderator)
    and each deferred item adds V_r − V_p (what asking gains over acting alone).
    """
    _check_tau(tau)
    if not outcomes:
        raise DeferralError("V(τ) needs at least one reviewed outcome, got none")
    total = 0.0
    for outcome in outcomes:
        gain = values.of(outcome.type) - values.r
        total += gain if outcome.confidence >= tau else -gain
    return total / len(outcomes)


def default_taus(outcomes: Iterable[Outcome]) -> list[float]:
    """0.00, 0.01, …, 1.00 plus every distinct confidence: V(τ) only changes at a confidence."""
    grid = {round(step / 100, 2) for step in range(101)}
    return sorted(grid | {outcome.confidence for outcome in outcomes})


def value_curve(
    outcomes: Sequence[Outcome], values: Values, taus: Iterable[float] | None = None
) -> list[tuple[float, float]]:
    """(τ, V(τ)) for each τ, in ascending τ; the default τs are those of `default_taus`."""
    chosen = default_taus(outcomes) if taus is None else sorted(set(taus))
    return [(tau, value(outcomes, values, tau)) for tau in chosen]


def choose_threshold(
    outcomes: Sequence[Outcome], values: Values, *, min_reviewed: int = MIN_REVIEWED
) -> tuple[float, float]:
    """The (τ, V(τ)) with the highest V over the default τs; of equal values the lowest τ, which defers least."""
    if len(outcomes) < min_reviewed:
        raise DeferralError(f"choosing a threshold needs at least {min_reviewed} reviewed items, got {len(outcomes)}")
    curve = value_curve(outcomes, values)
    best = max(v for _, v in curve)
    return next((tau, v) for tau, v in curve if v >= best - _TIE_TOLERANCE)


def _check_tau(tau: float) -> None:
    if isinstance(tau, bool) or not (isinstance(tau, int | float) and 0.0 <= tau <= 1.0):
        raise DeferralError(f"the threshold τ must be a number from 0 to 1, got {tau!r}")


# --- Calibration -------------------------------------------------------------------------------

# Probabilities are kept this far from 0 and 1 so that logits and logarithms stay finite.
_EPSILON = 1e-6
TEMPERATURE_RANGE = (0.05, 20.0)


@dataclass(frozen=True)
class Platt:
    """Platt scaling: p = 1 / (1 + exp(a·score + b)); a negative `a` means higher scores are likelier positive."""

    a: float
    b: float

    def __call__(self, score: float) -> float:
        return _sigmoid(-(self.a * score + self.b))


@dataclass(frozen=True)
class Temperature:
    """Temperature scaling: the logit log(p / (1 − p)) is divided by T; T > 1 softens, T < 1 sharpens."""

    t: float

    def __call__(self, confidence: float) -> float:
        return _sigmoid(_logit(confidence) / self.t)


def fit_platt(scores: Sequence[float], labels: Sequence[bool], *, max_iterations: int = 100) -> Platt:
    """Fit a and b by Newton's method on the log-loss against Platt's smoothed targets.

    The targets (N₊ + 1)/(N₊ + 2) and 1/(N₋ + 2) instead of 1 and 0 keep a perfectly separable set from
    pushing `a` to infinity. Each Newton step is halved until the loss decreases.
    """
    _check_pairs(scores, labels, "scores")
    positives = sum(labels)
    negatives = len(labels) - positives
    targets = [(positives + 1) / (positives + 2) if y else 1 / (negatives + 2) for y in labels]

    def loss(a: float, b: float) -> float:
        # With p = 1/(1+e^f), −[t·log p + (1−t)·log(1−p)] simplifies to softplus(f) − (1−t)·f.
        return sum(_softplus(a * s + b) - (1 - t) * (a * s + b) for s, t in zip(scores, targets, strict=True))

    a, b = 0.0, math.log((negatives + 1) / (positives + 1))
    current = loss(a, b)
    for _ in range(max_iterations):
        grad_a = grad_b = h_aa = h_ab = h_bb = 0.0
        for s, t in zip(scores, targets, strict=True):
            p = _sigmoid(-(a * s + b))
            weight = max(p * (1 - p), 1e-12)
            grad_a += (t - p) * s
            grad_b += t - p
            h_aa += weight * s * s
            h_ab += weight * s
            h_bb += weight
        if abs(grad_a) < 1e-9 and abs(grad_b) < 1e-9:
            break
        # A tiny ridge keeps the 2×2 system solvable when all scores are equal.
        h_aa += 1e-12
        h_bb += 1e-12
        det = h_aa * h_bb - h_ab * h_ab
        step_a = (h_bb * grad_a - h_ab * grad_b) / det
        step_b = (h_aa * grad_b - h_ab * grad_a) / det
        size = 1.0
        while size > 1e-10:
            candidate = loss(a - size * step_a, b - size * step_b)
            # Armijo's rule: accept the step once the loss drops by a small share of what the slope promises.
            if candidate <= current - 1e-4 * size * (grad_a * step_a + grad_b * step_b):
                break
            size /= 2
        else:
            break  # no step improves the loss any more: converged as far as floating point allows
        a, b, current = a - size * step_a, b - size * step_b, candidate
    return Platt(a=a, b=b)


def fit_temperature(confidences: Sequence[float], labels: Sequence[bool]) -> Temperature:
    """Find the T in TEMPERATURE_RANGE that minimises the negative log-likelihood, by golden-section search.

    The search runs over log T, where the likelihood is unimodal (it is convex in 1/T), so the same
    number of steps gives the same relative precision for a T of 0.1 as for one of 10.
    """
    _check_pairs(confidences, labels, "confidences")
    for confidence in confidences:
        _check_probability(confidence, "confidence")
    logits = [_logit(c) for c in confidences]

    def nll(log_t: float) -> float:
        scale = math.exp(-log_t)
        # −log σ(x) = softplus(−x) and −log(1 − σ(x)) = softplus(x).
        return sum(_softplus(-z * scale) if y else _softplus(z * scale) for z, y in zip(logits, labels, strict=True))

    low, high = (math.log(bound) for bound in TEMPERATURE_RANGE)
    ratio = (math.sqrt(5) - 1) / 2
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    f_left, f_right = nll(left), nll(right)
    while high - low > 1e-7:
        if f_left <= f_right:
            high, right, f_right = right, left, f_left
            left = high - ratio * (high - low)
            f_left = nll(left)
        else:
            low, left, f_left = left, right, f_right
            right = low + ratio * (high - low)
            f_right = nll(right)
    return Temperature(t=math.exp((low + high) / 2))


def reliability(probs: Sequence[float], labels: Sequence[bool], bins: int = 10) -> list[tuple[float, float, int]]:
    """(mean predicted probability, observed share of positives, count) for each non-empty equal-width bin.

    Bin k holds probabilities in [k/bins, (k+1)/bins); a probability of exactly 1 goes into the last bin.
    """
    _check_pairs(probs, labels, "probabilities", both_labels=False)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise DeferralError(f"bins must be a whole number of at least 1, got {bins!r}")
    sums = [0.0] * bins
    hits = [0] * bins
    counts = [0] * bins
    for p, y in zip(probs, labels, strict=True):
        _check_probability(p, "probability")
        k = min(int(p * bins), bins - 1)
        sums[k] += p
        hits[k] += bool(y)
        counts[k] += 1
    return [(sums[k] / counts[k], hits[k] / counts[k], counts[k]) for k in range(bins) if counts[k]]


def expected_calibration_error(probs: Sequence[float], labels: Sequence[bool], bins: int = 10) -> float:
    """Σ over bins of (bin count / total) · |mean probability − observed share|; 0 is perfectly calibrated."""
    rows = reliability(probs, labels, bins)
    total = sum(count for _, _, count in rows)
    return sum(count / total * abs(mean - observed) for mean, observed, count in rows)


def _check_pairs(numbers: Sequence[float], labels: Sequence[bool], what: str, *, both_labels: bool = True) -> None:
    if len(numbers) != len(labels):
        raise DeferralError(f"{what} and labels must have the same length, got {len(numbers)} and {len(labels)}")
    if not numbers:
        raise DeferralError(f"calibration needs at least one reviewed item, got no {what}")
    # A fit on one label only can push the scale to either end of its range; measuring (ECE) can do without.
    if both_labels and (all(labels) or not any(labels)):
        raise DeferralError(f"calibration needs reviewed items with both labels, got only {bool(labels[0])}")
    for number in numbers:
        if isinstance(number, bool) or not (isinstance(number, int | float) and math.isfinite(number)):
            raise DeferralError(f"{what} must be finite numbers, got {number!r}")


def _check_probability(p: float, what: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise DeferralError(f"each {what} must be from 0 to 1, got {p!r}")


def _logit(p: float) -> float:
    clamped = min(max(p, _EPSILON), 1 - _EPSILON)
    return math.log(clamped / (1 - clamped))


def _sigmoid(x: float) -> float:
    # Two branches so that exp never overflows for large |x|.
    if x >= 0:
        return 1 / (1 + math.exp(-x))
    e = math.exp(x)
    return e / (1 + e)


def _softplus(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))
