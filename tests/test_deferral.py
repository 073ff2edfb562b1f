"""Value-sensitive deferral: V(τ) against hand-computed numbers, its properties, the threshold choice, calibration."""

from __future__ import annotations

import itertools
import math
import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.deferral import (
    MIN_REVIEWED,
    Outcome,
    Platt,
    Temperature,
    Values,
    choose_threshold,
    default_taus,
    expected_calibration_error,
    fit_platt,
    fit_temperature,
    reliability,
    value,
    value_curve,
)
from engine.errors import UneraseError

DEFAULTS = Values()  # tp 1, tn 1, fp −4, fn −2, r −0.5: gains V_p − V_r of 1.5, 1.5, −3.5, −1.5

# The worked example of docs/deferral.md: one outcome of each type, the wrong ones least confident.
WORKED = [
    Outcome(confidence=0.9, predicted=True, actual=True),  # tp
    Outcome(confidence=0.8, predicted=False, actual=False),  # tn
    Outcome(confidence=0.6, predicted=True, actual=False),  # fp
    Outcome(confidence=0.4, predicted=False, actual=True),  # fn
]


def test_outcome_types_follow_prediction_and_truth() -> None:
    assert [o.type for o in WORKED] == ["tp", "tn", "fp", "fn"]


@pytest.mark.parametrize(
    ("tau", "expected"),
    [
        (0.0, (1.5 + 1.5 - 3.5 - 1.5) / 4),  # everything accepted
        (0.4, (1.5 + 1.5 - 3.5 - 1.5) / 4),  # confidence ≥ τ is accepted, so the fn at 0.4 still is
        (0.5, (1.5 + 1.5 - 3.5 + 1.5) / 4),  # the fn is deferred: V_r − V_fn = +1.5
        (0.61, (1.5 + 1.5 + 3.5 + 1.5) / 4),  # the fp is deferred too: V_r − V_fp = +3.5
        (0.85, (1.5 - 1.5 + 3.5 + 1.5) / 4),  # deferring the correct tn costs 1.5
        (1.0, (-1.5 - 1.5 + 3.5 + 1.5) / 4),  # everything deferred
    ],
)
def test_worked_example_by_hand(tau: float, expected: float) -> None:
    assert value(WORKED, DEFAULTS, tau) == pytest.approx(expected)


def test_worked_example_threshold_defers_exactly_the_wrong_decisions() -> None:
    # Every τ in (0.6, 0.8] gives V = 2.0; the lowest grid point above 0.6 defers the fewest future items.
    assert choose_threshold(WORKED, DEFAULTS, min_reviewed=1) == (0.61, pytest.approx(2.0))


def test_value_curve_uses_the_grid_and_every_confidence() -> None:
    odd = [Outcome(0.333, True, True), Outcome(0.5, False, False)]
    taus = default_taus(odd)
    assert taus[0] == 0.0 and taus[-1] == 1.0
    assert len(taus) == 102 and 0.333 in taus  # 0.5 is already on the grid
    assert taus == sorted(taus)
    curve = value_curve(odd, DEFAULTS)
    assert [tau for tau, _ in curve] == taus
    assert value_curve(WORKED, DEFAULTS, taus=[0.5, 0.0, 0.5]) == [
        (0.0, pytest.approx(-0.5)),
        (0.5, pytest.approx(0.25)),
    ]


outcomes_strategy = st.lists(
    st.builds(Outcome, confidence=st.floats(0.0, 1.0), predicted=st.booleans(), actual=st.booleans()),
    min_size=1,
    max_size=40,
)
values_strategy = st.tuples(
    st.integers(-10, 10), st.integers(-10, 10), st.integers(-10, 10), st.integers(-10, 10), st.floats(0.01, 0.99)
).filter(lambda v: min(v[:4]) < max(v[:4]))


def make_values(raw: tuple[int, int, int, int, float]) -> Values:
    """Values from four outcome values and a position of V_r strictly between their worst and best."""
    tp, tn, fp, fn, position = raw
    worst, best = min(tp, tn, fp, fn), max(tp, tn, fp, fn)
    return Values(tp=tp, tn=tn, fp=fp, fn=fn, r=worst + position * (best - worst))


def realised(outcomes: list[Outcome], values: Values, tau: float) -> float:
    """What the site actually gets per item at τ: V_p for each accepted outcome, V_r for each deferred one."""
    worth = {"tp": values.tp, "tn": values.tn, "fp": values.fp, "fn": values.fn}
    return sum(worth[o.type] if o.confidence >= tau else values.r for o in outcomes) / len(outcomes)


@given(outcomes_strategy, values_strategy)
def test_accepting_everything_is_the_value_of_acting_alone_minus_v_r(outcomes: list[Outcome], raw: tuple) -> None:
    values = make_values(raw)
    assert value(outcomes, values, 0.0) == pytest.approx(realised(outcomes, values, 0.0) - values.r, abs=1e-9)


@given(outcomes_strategy, values_strategy)
def test_deferring_everything_is_the_mirror_of_accepting_everything(outcomes: list[Outcome], raw: tuple) -> None:
    values = make_values(raw)
    below_one = [o for o in outcomes if o.confidence < 1.0] or [Outcome(0.5, True, True)]
    # Σ_p (V_r − V_p)·F^r_p with every F^r_p equal to the share of type p.
    assert value(below_one, values, 1.0) == pytest.approx(-value(below_one, values, 0.0), abs=1e-9)


@given(outcomes_strategy, values_strategy, st.floats(0.0, 1.0))
def test_v_is_twice_the_realised_gain_over_deferral_shifted_by_a_constant(
    outcomes: list[Outcome], raw: tuple, tau: float
) -> None:
    # F_p + F^r_p is the fixed share of type p, so V(τ) = 2·(realised(τ) − V_r) − V(0): maximising V
    # maximises what the site actually gets.
    values = make_values(raw)
    expected = 2 * (realised(outcomes, values, tau) - values.r) - value(outcomes, values, 0.0)
    assert value(outcomes, values, tau) == pytest.approx(expected, abs=1e-9)


@given(outcomes_strategy, values_strategy)
def test_chosen_threshold_is_the_lowest_tau_with_the_highest_value(outcomes: list[Outcome], raw: tuple) -> None:
    values = make_values(raw)
    tau, best = choose_threshold(outcomes, values, min_reviewed=1)
    curve = value_curve(outcomes, values)
    assert (tau, best) in curve
    assert all(v <= best + 1e-9 for _, v in curve)
    assert all(v < best - 1e-9 for t, v in curve if t < tau)


@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.booleans()), min_size=1, max_size=30))
def test_when_every_decision_is_right_nothing_is_deferred(items: list[tuple[float, bool]]) -> None:
    outcomes = [Outcome(confidence, flagged, flagged) for confidence, flagged in items]
    curve = value_curve(outcomes, DEFAULTS)
    assert all(later <= earlier + 1e-12 for (_, earlier), (_, later) in itertools.pairwise(curve))
    assert choose_threshold(outcomes, DEFAULTS, min_reviewed=1)[0] == 0.0


@given(st.lists(st.tuples(st.floats(0.0, 0.99), st.booleans()), min_size=1, max_size=30))
def test_when_every_decision_is_wrong_everything_is_deferred(items: list[tuple[float, bool]]) -> None:
    outcomes = [Outcome(confidence, flagged, not flagged) for confidence, flagged in items]
    tau, _ = choose_threshold(outcomes, DEFAULTS, min_reviewed=1)
    assert all(o.confidence < tau for o in outcomes)


def test_threshold_on_a_set_where_the_answer_is_obvious() -> None:
    right = [Outcome(round(0.70 + 0.01 * i, 2), i % 2 == 0, i % 2 == 0) for i in range(20)]  # 0.70 … 0.89, all correct
    wrong_flags = [Outcome(round(0.20 + 0.02 * i, 2), True, False) for i in range(10)]  # 0.20 … 0.38
    missed = [Outcome(round(0.41 + 0.01 * i, 2), False, True) for i in range(5)]  # 0.41 … 0.45
    tau, best = choose_threshold(right + wrong_flags + missed, DEFAULTS)
    assert tau == 0.46  # just above the most confident mistake
    assert best == pytest.approx((20 * 1.5 + 10 * 3.5 + 5 * 1.5) / 35)


def _sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def test_platt_recovers_a_known_logistic_relation() -> None:
    rng = random.Random(7)
    scores = [rng.uniform(-3, 3) for _ in range(4000)]
    labels = [rng.random() < _sigmoid(2 * s - 1) for s in scores]  # i.e. a = −2, b = 1
    platt = fit_platt(scores, labels)
    assert platt.a == pytest.approx(-2, abs=0.2)
    assert platt.b == pytest.approx(1, abs=0.15)
    assert platt(0.5) == pytest.approx(0.5, abs=0.05)
    assert expected_calibration_error([platt(s) for s in scores], labels) < 0.03


def test_platt_stays_finite_on_a_separable_set_thanks_to_smoothed_targets() -> None:
    platt = fit_platt([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [False, False, False, True, True, True])
    assert math.isfinite(platt.a) and math.isfinite(platt.b)
    assert platt(0.1) < 0.5 < platt(0.9)
    # Smoothed targets of 4/5 and 1/5 (three items per label) bound how sure the fit may become.
    # Without smoothing the fit would drive these to 1 and 0.
    assert 0.1 < platt(0.1) < 0.25 and 0.75 < platt(0.9) < 0.9
    assert (platt(-1e6), platt(1e6)) == (0.0, 1.0)  # far outside the fitted scores: no OverflowError


@pytest.mark.parametrize("true_t", [2.5, 0.5])
def test_temperature_recovers_a_known_miscalibration(true_t: float) -> None:
    rng = random.Random(11)
    confidences = [rng.uniform(0.02, 0.98) for _ in range(4000)]
    labels = [rng.random() < _sigmoid(_logit(c) / true_t) for c in confidences]
    temperature = fit_temperature(confidences, labels)
    assert temperature.t == pytest.approx(true_t, rel=0.1)
    before = expected_calibration_error(confidences, labels)
    after = expected_calibration_error([temperature(c) for c in confidences], labels)
    assert after < 0.03 < before


def test_temperature_clamps_confidences_of_exactly_zero_and_one() -> None:
    temperature = fit_temperature([0.0, 1.0, 0.3, 0.7], [False, True, True, False])
    assert math.isfinite(temperature.t)
    assert 0.0 < temperature(0.0) < temperature(1.0) < 1.0
    assert Temperature(t=1.0)(0.3) == pytest.approx(0.3)
    assert Platt(a=0.0, b=0.0)(123.0) == 0.5


def test_reliability_and_ece_by_hand() -> None:
    probs = [0.05, 0.15, 0.12, 1.0, 0.95]
    labels = [False, True, False, True, True]
    rows = reliability(probs, labels)
    assert rows == [
        (pytest.approx(0.05), 0.0, 1),
        (pytest.approx(0.135), 0.5, 2),
        (pytest.approx(0.975), 1.0, 2),  # 1.0 falls into the last bin
    ]
    assert expected_calibration_error(probs, labels) == pytest.approx(0.05 / 5 + 2 * 0.365 / 5 + 2 * 0.025 / 5)
    assert reliability(probs, labels, bins=1) == [(pytest.approx(0.454), 0.6, 5)]


def test_ece_is_small_when_calibrated_and_large_when_overconfident() -> None:
    rng = random.Random(3)
    probs = [rng.random() for _ in range(5000)]
    calibrated = [rng.random() < p for p in probs]
    assert expected_calibration_error(probs, calibrated) < 0.03
    overconfident = [rng.random() < 0.6 for _ in range(5000)]  # the model says 0.95, it is right 60% of the time
    assert expected_calibration_error([0.95] * 5000, overconfident) == pytest.approx(0.35, abs=0.03)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Values(r=1.0), "V_r must lie strictly between the worst outcome value (-4) and the best (1), got 1"),
        (lambda: Values(r=-6), "V_r must lie strictly between the worst outcome value (-4) and the best (1), got -6"),
        (lambda: Values(fp=math.nan), "V_fp must be a finite number, got nan"),
        (lambda: Outcome(1.5, True, True), "confidence must be a number from 0 to 1, got 1.5"),
        (lambda: Outcome(True, True, True), "confidence must be a number from 0 to 1, got True"),
        (lambda: value(WORKED, DEFAULTS, 1.2), "the threshold τ must be a number from 0 to 1, got 1.2"),
        (lambda: value([], DEFAULTS, 0.5), "V(τ) needs at least one reviewed outcome, got none"),
        (lambda: choose_threshold([], DEFAULTS), f"needs at least {MIN_REVIEWED} reviewed items, got 0"),
        (lambda: choose_threshold(WORKED * 7, DEFAULTS), f"needs at least {MIN_REVIEWED} reviewed items, got 28"),
        (lambda: fit_platt([0.1, 0.2], [True]), "scores and labels must have the same length, got 2 and 1"),
        (lambda: fit_platt([0.1, 0.2], [True, True]), "needs reviewed items with both labels, got only True"),
        (lambda: fit_platt([], []), "needs at least one reviewed item, got no scores"),
        (lambda: fit_platt([math.inf, 0.2], [True, False]), "scores must be finite numbers, got inf"),
        (lambda: fit_temperature([1.5, 0.2], [True, False]), "each confidence must be from 0 to 1, got 1.5"),
        (lambda: reliability([0.5], [True], bins=0), "bins must be a whole number of at least 1, got 0"),
        (lambda: expected_calibration_error([-0.1], [True]), "each probability must be from 0 to 1, got -0.1"),
    ],
)
def test_bad_input_is_rejected_with_the_bad_value_and_what_is_accepted(make: object, message: str) -> None:
    with pytest.raises(UneraseError, match=re.escape(message)) as raised:
        make()  # type: ignore[operator]
    assert raised.value.status == 422
