"""A site's own deferral: calibration and τ applied to decisions, the outcomes moderators reviewed, the site page
and the widget, through real rows in a real SQLite file and the real app."""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import Engine
from sqlmodel import Session

from engine.deferral import DeferralError, Outcome, Platt, Temperature
from web.db import make_engine
from web.deferral import (
    apply,
    calibration_json,
    calibration_of,
    parse_calibration,
    raw_cutoff,
    reviewed,
    reviewed_outcomes,
)
from web.models import AnalysisRecord, ModeratorDecision, Site, WidgetResult
from web.shown import effective
from web.store import Store

from .support.accounts import add_user, login
from .support.sites import ADMIN, FORUM, TOKEN, add_site
from .webapp import client, sse_events


def decision(label: str, confidence: float, proposed: str | None = None, *reasons: str) -> dict[str, Any]:
    data: dict[str, Any] = {
        "label": label,
        "severity": "none",
        "confidence": confidence,
        "categories": [],
        "reasons": list(reasons),
    }
    if proposed is not None:
        data["proposed_label"] = proposed
    return data


def site(threshold: float, calibration: Platt | Temperature | None = None) -> Site:
    return Site(key="s_test", name="Test forum", threshold=threshold, calibration=calibration_json(calibration))


# -- effective ---------------------------------------------------------------------------------------
def test_a_label_deferred_by_the_global_tau_is_judged_by_the_sites_own() -> None:
    globally_deferred = decision(
        "needs_review", 0.7, "flagged", "1 contentious term(s)", "deferred: confidence 0.70 < τ 0.80"
    )
    assert effective(site(0.5), globally_deferred) == ("flagged", ("1 contentious term(s)",))
    label, reasons = effective(site(0.75), globally_deferred)
    assert label == "needs_review"
    # the server's deferral reason is replaced by the site's, not repeated beside it
    assert reasons == ("1 contentious term(s)", "deferred: confidence 0.70 < τ 0.75")


def test_not_flagged_is_deferred_below_tau_too_and_kept_at_tau() -> None:
    clear = decision("not_flagged", 0.6, None, "no contentious term")
    assert effective(site(0.61), clear) == (
        "needs_review",
        ("no contentious term", "deferred: confidence 0.60 < τ 0.61"),
    )
    assert effective(site(0.6), clear) == ("not_flagged", ("no contentious term",))  # at τ is accepted


def test_calibration_can_change_the_outcome() -> None:
    flagged = decision("flagged", 0.6, None, "1 contentious term(s)")
    assert effective(site(0.5), flagged)[0] == "flagged"
    # this Platt scale maps 0.6 to σ(−(−10·0.6 + 7)) = σ(−1) ≈ 0.27
    label, reasons = effective(site(0.5, Platt(a=-10.0, b=7.0)), flagged)
    assert label == "needs_review" and reasons[-1] == "deferred: confidence 0.27 < τ 0.50"
    # a temperature below 1 sharpens, both ways: 0.45 becomes about 0.40 and 0.6 about 0.69
    sharp = Temperature(t=0.5)
    assert effective(site(0.42), decision("flagged", 0.45))[0] == "flagged"
    assert effective(site(0.42, sharp), decision("flagged", 0.45))[0] == "needs_review"
    assert effective(site(0.65), decision("flagged", 0.6))[0] == "needs_review"
    assert effective(site(0.65, sharp), decision("flagged", 0.6))[0] == "flagged"


def test_needs_review_from_an_undetermined_stage_stays_whatever_tau_says() -> None:
    undetermined = decision("needs_review", 0.0, None, "1 ambiguous term(s) could not be decided")
    for threshold in (0.0, 0.5, 1.0):
        assert effective(site(threshold), undetermined) == (
            "needs_review",
            ("1 ambiguous term(s) could not be decided",),
        )


# -- calibration and its inverse -------------------------------------------------------------------
GRID = [step / 1000 for step in range(1001)]
# each example checks a thousand confidences, so the per-example time limit would only measure the machine's load
PROPERTY = settings(max_examples=150, deadline=None)


def agrees(chosen: Site) -> None:
    calibrate, cutoff, tau = calibration_of(chosen), raw_cutoff(chosen), chosen.threshold
    # the grid, and the cutoff with its nearest neighbours, where rounding would show first
    near = (math.nextafter(cutoff, -1.0), cutoff, math.nextafter(cutoff, 2.0))
    for confidence in [*GRID, *(c for c in near if 0 <= c <= 1)]:
        assert (calibrate(confidence) < tau) == (confidence < cutoff), (confidence, cutoff, tau)


@PROPERTY
@given(tau=st.floats(0, 1), a=st.floats(-40, -0.05), b=st.floats(-20, 20))
def test_raw_cutoff_inverts_platt(tau: float, a: float, b: float) -> None:
    agrees(site(tau, Platt(a=a, b=b)))


@PROPERTY
@given(tau=st.floats(0, 1), t=st.floats(0.05, 20))
def test_raw_cutoff_inverts_temperature(tau: float, t: float) -> None:
    agrees(site(tau, Temperature(t=t)))


@PROPERTY
@given(tau=st.floats(0, 1))
def test_without_calibration_the_cutoff_is_tau(tau: float) -> None:
    assert raw_cutoff(site(tau)) == tau
    agrees(site(tau))


def test_cutoff_ends_when_nothing_or_everything_is_deferred() -> None:
    assert raw_cutoff(site(0.01, Platt(a=-1.0, b=0.0))) == 0.0  # σ(0) = 0.5 ≥ 0.01 already at 0
    everything = raw_cutoff(site(0.99, Platt(a=-1.0, b=0.0)))  # σ(1) ≈ 0.73 never reaches 0.99
    assert everything == math.nextafter(1.0, 2.0)  # above every confidence, so `confidence < cutoff` always holds


def test_stored_calibrations_round_trip_and_bad_ones_are_refused() -> None:
    for calibration in (Platt(a=-3.5, b=1.25), Temperature(t=1.7), None):
        assert parse_calibration(calibration_json(calibration)) == calibration
    for text, fragment in [
        ("{not json", "cannot be read"),
        ('{"method": "isotonic"}', "accepted: platt, temperature"),
        ('{"method": "platt", "a": 2, "b": 0}', "a must be negative"),
        ('{"method": "temperature", "t": 0}', "cannot be read"),
    ]:
        with pytest.raises(DeferralError, match=fragment):
            parse_calibration(text)


# -- reviewed outcomes from real rows --------------------------------------------------------------
def analysed(engine: Engine, site_key: str, confidence: float, label: str, proposed: str | None, *truth: str) -> str:
    """One widget analysis of the site, stored as the app stores it, with the moderators' labels in order."""
    analysis_id = uuid.uuid4().hex
    record = AnalysisRecord(id=analysis_id, text=f"post {analysis_id}", source="widget")
    Store(engine).save_new(record, [{"type": "decision", "data": decision(label, confidence, proposed)}])
    with Session(engine) as session:
        session.add(WidgetResult(cache_key=uuid.uuid4().hex, site_key=site_key, analysis_id=analysis_id))
        session.commit()
        for sequence, moderated in enumerate(truth, start=1):
            session.add(ModeratorDecision(analysis_id=analysis_id, sequence=sequence, moderator="mod", label=moderated))
            session.commit()
    return analysis_id


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    made = make_engine(f"sqlite:///{tmp_path / 'unerase.db'}")
    with Session(made) as session:
        session.add(Site(key="mine", name="Mine"))
        session.add(Site(key="other", name="Other"))
        session.commit()
    return made


def test_reviewed_outcomes_pair_the_automatic_label_with_the_newest_moderator_label(engine: Engine) -> None:
    analysed(engine, "mine", 0.9, "flagged", None, "flagged")  # tp
    analysed(engine, "mine", 0.8, "not_flagged", None, "not_flagged", "flagged")  # overturned later: fn
    analysed(engine, "mine", 0.4, "needs_review", "flagged", "not_flagged")  # deferred by the global τ: fp
    analysed(engine, "mine", 0.0, "needs_review", None, "flagged")  # undetermined: no label of its own
    analysed(engine, "mine", 0.7, "flagged", None)  # nobody reviewed it
    analysed(engine, "other", 0.6, "flagged", None, "flagged")  # another site's
    outcomes = sorted(reviewed_outcomes(engine, "mine"), key=lambda o: -o.confidence)
    assert outcomes == [Outcome(0.9, True, True), Outcome(0.8, False, True), Outcome(0.4, True, False)]
    assert [o.type for o in outcomes] == ["tp", "fn", "fp"]
    assert reviewed(engine, "mine").undetermined == 1
    assert reviewed_outcomes(engine, "other") == [Outcome(0.6, True, True)]
    assert reviewed_outcomes(engine, "nobody") == []


# -- the site page -----------------------------------------------------------------------------------
@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with client(tmp_path, admin_token=TOKEN) as test_client:
        yield test_client


def engine_of(api: TestClient) -> Engine:
    found: Engine = api.app.state.services.store.engine  # type: ignore[attr-defined]
    return found


def site_row(api: TestClient, key: str) -> Site:
    with Session(engine_of(api)) as session:
        found = session.get(Site, key)
        assert found is not None
        return found


def seed_separable(api: TestClient, key: str) -> None:
    """40 reviewed decisions from 0.5 to 0.9875: every one below 0.7 was wrong, every one from 0.7 on right;
    some were deferred by the global τ, and two more were undetermined."""
    for i in range(40):
        confidence = 0.5 + i / 80
        automatic = "flagged" if i % 2 else "not_flagged"
        right = confidence >= 0.7
        truth = automatic if right else ("not_flagged" if automatic == "flagged" else "flagged")
        if i % 3 == 0:
            analysed(engine_of(api), key, confidence, "needs_review", automatic, truth)
        else:
            analysed(engine_of(api), key, confidence, automatic, None, truth)
    for _ in range(2):
        analysed(engine_of(api), key, 0.0, "needs_review", None, "flagged")


def test_the_page_proposes_tau_and_calibration_and_applies_both(api: TestClient) -> None:
    key = add_site(api)
    seed_separable(api, key)
    page = api.get(f"/admin/sites/{key}", headers=ADMIN)
    assert page.status_code == 200 and page.template.name == "admin_site.html"  # type: ignore[attr-defined]
    report = page.context["report"]  # type: ignore[attr-defined]
    assert (report.reviewed, report.undetermined, report.method) == (40, 2, "platt")
    assert report.chosen is not None and report.refusal is None
    assert page.text.count("<svg") == 2  # V(τ) and the calibration curve
    assert f"chosen τ = {report.chosen[0]:.2f}" in page.text and "current τ = 0.50" in page.text
    assert "perfectly calibrated" in page.text and "2 more were reviewed" in page.text
    assert report.ece_after < report.ece_before  # the fit learnt that low confidences were wrong
    assert "Use the chosen τ and calibration" in page.text
    assert f"raw confidence below {report.chosen_cutoff:.3f} would be under review" in page.text

    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    assert api.post(f"/admin/sites/{key}/deferral", data={"csrf": "forged"}, headers=ADMIN).status_code == 403
    applied = api.post(f"/admin/sites/{key}/deferral", data={"csrf": csrf}, headers=ADMIN, follow_redirects=False)
    assert applied.status_code == 303 and applied.headers["location"] == f"/admin/sites/{key}?saved=deferral"
    assert "Saved: this site now uses the chosen threshold" in api.get(applied.headers["location"], headers=ADMIN).text
    stored = site_row(api, key)
    assert stored.threshold == report.chosen[0]
    assert parse_calibration(stored.calibration) == report.calibration
    # the best τ defers exactly the wrong decisions: those below 0.7, the last of which was 0.6875
    assert 0.6875 < raw_cutoff(stored) <= 0.7
    assert raw_cutoff(stored) == report.chosen_cutoff  # what the page announced
    again = api.get(f"/admin/sites/{key}", headers=ADMIN)
    assert f"Now: τ = {report.chosen[0]:.2f}" in again.text and "Platt scaling (a = " in again.text


def test_with_few_reviewed_items_the_page_says_why_it_cannot_choose(api: TestClient) -> None:
    key = add_site(api)
    for i in range(5):
        analysed(engine_of(api), key, 0.5 + i / 10, "flagged", None, "flagged" if i > 1 else "not_flagged")
    page = api.get(f"/admin/sites/{key}", headers=ADMIN)
    assert page.status_code == 200
    assert page.context["report"].chosen is None  # type: ignore[attr-defined]
    assert "choosing a threshold needs at least 30 reviewed items, got 5" in page.text
    assert "Use the chosen τ" not in page.text and "chosen τ =" not in page.text
    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    refused = api.post(f"/admin/sites/{key}/deferral", data={"csrf": csrf}, headers=ADMIN)
    assert refused.status_code == 422 and "at least 30 reviewed items, got 5" in refused.json()["detail"]
    assert site_row(api, key).threshold == 0.5 and site_row(api, key).calibration == ""
    assert "/admin/sites/" + key in api.get("/admin/sites", headers=ADMIN).text  # the list links the page


def test_values_form_round_trip_and_impossible_values_are_refused(api: TestClient) -> None:
    key = add_site(api)
    page = api.get(f"/admin/sites/{key}", headers=ADMIN)
    assert page.context["values"] == {  # type: ignore[attr-defined]
        "value_tp": 1.0,
        "value_tn": 1.0,
        "value_fp": -4.0,
        "value_fn": -2.0,
        "value_r": -0.5,
    }
    assert "default -4: the author is accused in public" in page.text
    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    chosen = {"value_tp": "2", "value_tn": "0.5", "value_fp": "-10", "value_fn": "-3", "value_r": "-1.5"}
    saved = api.post(f"/admin/sites/{key}/values", data={**chosen, "csrf": csrf}, headers=ADMIN, follow_redirects=False)
    assert saved.status_code == 303
    again = api.get(f"/admin/sites/{key}", headers=ADMIN)
    assert again.context["values"] == {name: float(value) for name, value in chosen.items()}  # type: ignore[attr-defined]
    assert again.context["report"].values.fp == -10.0  # type: ignore[attr-defined]
    assert 'name="value_fp" type="number" step="any" required value="-10.0"' in again.text

    impossible = {**chosen, "value_r": "5", "csrf": csrf}
    refused = api.post(f"/admin/sites/{key}/values", data=impossible, headers={**ADMIN, "Accept": "text/html"})
    assert refused.status_code == 422 and refused.template.name == "error.html"  # type: ignore[attr-defined]
    assert "V_r must lie strictly between the worst outcome value (-10) and the best (2), got 5" in refused.text
    assert api.post(f"/admin/sites/{key}/values", data={**chosen, "csrf": "forged"}, headers=ADMIN).status_code == 403
    assert site_row(api, key).value_r == -1.5


def test_a_moderator_cannot_reach_the_site_page(api: TestClient) -> None:
    key = add_site(api)
    add_user(api, "mod")
    assert login(api, "mod").status_code == 303
    page = api.get(f"/admin/sites/{key}")
    assert page.status_code == 403 and "'mod' is a moderator" in page.text
    form = {"csrf": "anything", "value_tp": "1", "value_tn": "1", "value_fp": "-4", "value_fn": "-2", "value_r": "0"}
    assert api.post(f"/admin/sites/{key}/values", data=form).status_code == 403
    assert api.post(f"/admin/sites/{key}/deferral", data={"csrf": "anything"}).status_code == 403
    assert site_row(api, key).value_r == -0.5
    assert api.get("/admin/sites/nosuchkey", headers=ADMIN).status_code == 404


# -- the widget --------------------------------------------------------------------------------------
POSTS = [
    {"id": "slur", "text": "a faggot and a junkie"},  # flagged by an unambiguous term, confidence 0.9
    {"id": "plain", "text": "a perfectly friendly sentence"},  # not_flagged without a model, confidence 0.6
]


def labels(api: TestClient, key: str) -> dict[str, tuple[str, str]]:
    response = api.post(f"/api/v1/widget/{key}/check", json={"lang": "en", "posts": POSTS}, headers={"Origin": FORUM})
    assert response.status_code == 200, response.text
    return {r["id"]: (r["label"], r["analysis_id"]) for r in response.json()["results"]}


def test_the_widget_shows_under_review_below_the_sites_tau_and_the_label_above_it(api: TestClient) -> None:
    strict = add_site(api, threshold=0.95)
    assert {post: label for post, (label, _) in labels(api, strict).items()} == {
        "slur": "needs_review",
        "plain": "needs_review",  # not_flagged is deferred as well
    }
    lenient = add_site(api, threshold=0.3)
    answers = labels(api, lenient)
    assert {post: label for post, (label, _) in answers.items()} == {"slur": "flagged", "plain": "not_flagged"}

    # a calibration that maps 0.9 to σ(−(−10·0.9 + 9.5)) ≈ 0.38 defers the flag at τ 0.5
    services = api.app.state.services  # type: ignore[attr-defined]
    apply(services.sites, site_row(api, lenient), 0.5, Platt(a=-10.0, b=9.5))
    calibrated = labels(api, lenient)
    assert calibrated["slur"][0] == "needs_review"
    with Session(engine_of(api)) as session:
        session.add(ModeratorDecision(analysis_id=calibrated["slur"][1], moderator="mod", label="flagged"))
        session.commit()
    assert labels(api, lenient)["slur"][0] == "flagged"  # a moderator's decision wins over τ


def test_the_panel_document_and_the_queue_follow_the_sites_tau(api: TestClient) -> None:
    """What the reader's panel shows agrees with the button, and what a site defers waits in the review queue;
    changing τ analyses nothing again."""
    strict = add_site(api, threshold=0.95)
    answers = labels(api, strict)
    slur = answers["slur"][1]
    document = api.get(f"/api/v1/widget/{strict}/analyses/{slur}", headers={"Origin": FORUM}).json()
    assert document["decision"]["label"] == "needs_review"
    assert document["decision"]["reasons"][-1] == "deferred: confidence 0.90 < τ 0.95"

    from web.review import Review

    queue = Review(engine_of(api)).queue()
    assert {item.analysis_id for item in queue} == {slur, answers["plain"][1]}
    services = api.app.state.services  # type: ignore[attr-defined]
    apply(services.sites, site_row(api, strict), 0.5, None)
    services.widget.documents.clear()  # another τ: the kept bytes of this process would last 10 s
    assert labels(api, strict) == {"slur": ("flagged", slur), "plain": ("not_flagged", answers["plain"][1])}
    document = api.get(f"/api/v1/widget/{strict}/analyses/{slur}", headers={"Origin": FORUM}).json()
    assert document["decision"]["label"] == "flagged"
    assert Review(engine_of(api)).queue() == []


def test_the_panels_event_stream_ends_on_the_sites_label(api: TestClient) -> None:
    strict = add_site(api, threshold=0.95)
    slur = labels(api, strict)["slur"][1]
    response = api.get(f"/api/v1/widget/{strict}/analyses/{slur}/events", headers={"Origin": FORUM})
    decisions = [json.loads(data) for name, data in sse_events(response.text) if name == "decision"]
    assert [d["label"] for d in decisions] == ["needs_review"]
    assert decisions[0]["reasons"][-1] == "deferred: confidence 0.90 < τ 0.95"
