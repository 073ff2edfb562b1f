"""What a reader is shown of an analysis, in one place.

Three things stand between the engine's decision and what a page shows: the site's own calibration and τ
(`effective`: applied when a result is read, so changing them costs no analysis), the newest moderator decision,
which replaces the automatic one wherever it is shown (`apply_to_summary`, `apply_to_document`), and, for the
widget, the one-line answer per post with its button (`summary`, `button`). The widget's check, its panel and
its event stream all read them from here; the review queue defers with the same rule (web.deferral.raw_cutoff).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.result import StoredEvent, fold
from web.deferral import DEFERRED_PREFIX, LABELS, calibration_of
from web.models import ModeratorDecision, Site


# -- the site's calibration and τ -------------------------------------------------------------
def automatic_label(decision: Mapping[str, Any]) -> str:
    """The label the engine reached before any τ: the proposed one when the global τ deferred it."""
    label: str = decision.get("proposed_label") or decision["label"]
    return label


def effective(site: Site, decision: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """(label, reasons) of a decision as this site shows it, before any moderator's decision.

    A flagged or not_flagged label (also one the global τ deferred) whose calibrated confidence is below
    the site's τ becomes needs_review, with the reason; at or above τ it stands, even where the global τ
    had deferred it. needs_review from an undetermined stage has no label to show, so it stays.
    """
    label = automatic_label(decision)
    reasons = tuple(decision.get("reasons", ()))
    if label not in LABELS:
        return label, reasons
    kept = tuple(reason for reason in reasons if not reason.startswith(DEFERRED_PREFIX))
    calibrated = calibration_of(site)(decision["confidence"])
    if calibrated < site.threshold:
        return "needs_review", (*kept, f"{DEFERRED_PREFIX}{calibrated:.2f} < τ {site.threshold:.2f}")
    return label, kept


def as_site_shows(site: Site, event: StoredEvent) -> StoredEvent:
    """An event of the stream as the site shows it: the decision with the site's calibration and τ (the panel
    that follows a running analysis then ends on the label its button will show)."""
    if event["type"] != "decision":
        return event
    label, reasons = effective(site, event["data"])
    return {**event, "data": {**event["data"], "label": label, "reasons": list(reasons)}}


# -- the moderator's decision -------------------------------------------------------------------
def apply_to_summary(answer: dict[str, Any], decision: ModeratorDecision) -> dict[str, Any]:
    """A widget answer with the moderator's label in place of the automatic one."""
    return {**answer, "label": decision.label, "status": "complete", "decided_by": "moderator"}


def apply_to_document(document: dict[str, Any], decision: ModeratorDecision) -> dict[str, Any]:
    """An analysis document as the moderator decided it: their label, and their explanation if they wrote one."""
    automatic = document.get("decision") or {}
    reasons = [f"decided by a moderator on {decision.created_at:%Y-%m-%d}", *automatic.get("reasons", [])]
    changed = {
        **document,
        "status": "complete",
        "decision": {
            "severity": "none",
            "confidence": 1.0,
            "categories": [],
            **automatic,
            "label": decision.label,
            "decided_by": "moderator",
            "reasons": reasons,
        },
    }
    if decision.explanation is not None:
        changed["explanation"] = {
            **(document.get("explanation") or {}),
            "text": decision.explanation,
            "decided_by": "moderator",
        }
    return changed


def document_as_shown(document: dict[str, Any], site: Site, moderator: ModeratorDecision | None) -> dict[str, Any]:
    """An analysis document as the site's panel shows it: the decision with the site's τ and calibration, then
    the moderator's decision over it when there is one."""
    if document["decision"] is not None:
        document["decision"] = as_site_shows(site, {"type": "decision", "data": document["decision"]})["data"]
    if moderator is not None:
        document = apply_to_document(document, moderator)
    return document


# -- the widget's answer for a post ---------------------------------------------------------------
def button(site: Site, label: str, mentions: bool) -> str | None:
    """The widget's button for a post: "why" (Why flagged?) on a flagged post; "about" (About this word) on a post
    that only quotes, reports or reclaims a word (docs/uses.md); on a post nothing could decide,
    what the site chose (`show_undecided`): nothing (the default, as an "Under review" reads as an accusation),
    "words" (a neutral "About these words") or "review" (Under review). None: no button."""
    if label == "flagged":
        return "why"
    if label == "needs_review":
        return {"about": "words", "review": "review"}.get(site.show_undecided) or ("about" if mentions else None)
    return "about" if mentions else None


def summary(
    analysis_id: str,
    post_id: str,
    events: Sequence[StoredEvent],
    site: Site,
    moderator: ModeratorDecision | None = None,
) -> dict[str, Any]:
    """One post's answer: the label the widget shows, with the site's calibration and threshold applied
    (`effective`: below τ, flagged and not_flagged alike become needs_review, "under review");
    a moderator's decision, when there is one, replaces the automatic label whatever the threshold says."""
    result = fold(events)
    decision = result["decision"]
    mentions = bool(decision and decision.get("uses"))
    if moderator is not None:
        severity = decision["severity"] if decision else None
        answer = {"id": post_id, "analysis_id": analysis_id, "label": "", "severity": severity, "status": "complete"}
        answer = apply_to_summary(answer, moderator)
        return {**answer, "button": button(site, answer["label"], mentions)}
    if decision is None:
        # still running: an unambiguous term used against someone already flags it; other hits wait for their
        # verdicts (a hit the rules read as quoted or reclaimed flags nothing, engine.uses)
        hits = [h for h in result["hits"] if h.get("use", "attack") == "attack"]
        label = "flagged" if any(not h["ambiguous"] for h in hits) else "needs_review" if hits else "pending"
        return {
            "id": post_id,
            "analysis_id": analysis_id,
            "label": label,
            "severity": None,
            "status": "running",
            "button": button(site, label, False) if label != "pending" else None,
        }
    label, _ = effective(site, decision)  # the site's own calibration and τ, not the server's global τ
    return {
        "id": post_id,
        "analysis_id": analysis_id,
        "label": label,
        "severity": decision["severity"],
        "status": "complete",
        "button": button(site, label, mentions),
    }
