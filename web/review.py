"""The moderators' review queue: which analyses wait for a person, what one item shows, and the actions on it.

An analysis waits for review when its automatic decision was needs_review (deferred) and no moderator has
decided it yet, or when a reader marked its explanation wrong after the last moderator decision (disputed).
Actions write a `ModeratorDecision` when they decide a label and always an `AuditEntry`; audit rows are only
ever inserted. The newest moderator decision overrides the automatic one wherever the widget reads a result
(`apply_to_summary`, `apply_to_document`).

Blocking (SQLAlchemy): routes call `Review` in a thread.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from engine.errors import UneraseError
from web.auth import as_utc
from web.models import (
    AnalysisRecord,
    AuditEntry,
    DecisionRecord,
    Feedback,
    ModeratorDecision,
    Site,
    WidgetResult,
    utcnow,
)
from web.results import analysis_document

Kind = Literal["deferred", "disputed"]
KINDS: tuple[Kind, ...] = ("deferred", "disputed")
Action = Literal["confirm", "overturn", "explain", "note"]
ACTIONS: tuple[Action, ...] = ("confirm", "overturn", "explain", "note")
LABELS = ("flagged", "not_flagged")
EXCERPT = 120
QUEUE_LIMIT = 500  # a page a person can work through; the filters narrow it


class ReviewError(UneraseError):
    code = "invalid-review-action"


class CannotConfirm(UneraseError):
    status = 409
    code = "cannot-confirm"


class Conflict(UneraseError):
    """Another moderator decided the item after this one's page was loaded; their decision stands."""

    status = 409
    code = "review-conflict"


@dataclass(frozen=True)
class QueueFilter:
    language: str | None = None
    site: str | None = None
    kind: Kind | None = None

    @classmethod
    def parse(cls, language: str | None, site: str | None, kind: str | None) -> QueueFilter:
        if kind and kind not in KINDS:
            raise ReviewError(f"unknown reason kind '{kind}'; accepted: {', '.join(KINDS)}")
        checked: Kind | None = next((k for k in KINDS if k == kind), None)
        return cls(language or None, site or None, checked)

    def query(self) -> dict[str, str]:
        """The filter as query-string values (empty ones left out), to carry it from page to page."""
        values = {"language": self.language, "site": self.site, "kind": self.kind}
        return {name: value for name, value in values.items() if value}


@dataclass(frozen=True)
class QueueItem:
    analysis_id: str
    created_at: datetime
    kinds: tuple[Kind, ...]
    reasons: tuple[str, ...]
    language: str | None
    site_key: str | None
    site_name: str | None
    excerpt: str


@dataclass(frozen=True)
class State:
    """What an item's label is at one moment; audit entries keep it before and after each action."""

    label: str
    decided_by: str  # "engine" or "moderator"
    moderator: str | None = None
    explanation: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "decided_by": self.decided_by,
            "moderator": self.moderator,
            "explanation": self.explanation,
        }


@dataclass(frozen=True)
class ReviewItem:
    record: AnalysisRecord
    document: dict[str, Any]
    state: State
    automatic_label: str | None
    feedback: tuple[Feedback, ...]
    decisions: tuple[ModeratorDecision, ...]
    audit: tuple[AuditEntry, ...]
    site_key: str | None = None

    def history(self) -> list[tuple[AuditEntry, dict[str, Any]]]:
        """Each audit entry with its state after the action, read back from JSON."""
        return [(entry, json.loads(entry.after)) for entry in self.audit]


def latest_decisions(engine: Engine, analysis_ids: Iterable[str]) -> dict[str, ModeratorDecision]:
    """The newest moderator decision of each analysis that has one."""
    ids = list(set(analysis_ids))
    if not ids:
        return {}
    with Session(engine, expire_on_commit=False) as session:
        rows = session.exec(
            select(ModeratorDecision)
            .where(col(ModeratorDecision.analysis_id).in_(ids))
            .order_by(col(ModeratorDecision.created_at), col(ModeratorDecision.id))
        )
        return {row.analysis_id: row for row in rows}  # later rows replace earlier ones


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


class Review:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def _session(self) -> Session:
        # rows go on to templates after the session closes
        return Session(self.engine, expire_on_commit=False)

    # -- the queue ----------------------------------------------------------------------------------
    def queue(self, filters: QueueFilter = QueueFilter()) -> list[QueueItem]:
        """Items waiting for a moderator, newest first."""
        with self._session() as session:
            deferred = {
                row.analysis_id: row
                for row in session.exec(select(DecisionRecord).where(DecisionRecord.label == "needs_review"))
            }
            disputes: dict[str, list[Feedback]] = {}
            for feedback in session.exec(
                select(Feedback).where(col(Feedback.helpful).is_(False)).order_by(col(Feedback.created_at))
            ):
                disputes.setdefault(feedback.analysis_id, []).append(feedback)
            candidates = set(deferred) | set(disputes)
            decided = latest_decisions(self.engine, candidates)
            waiting: dict[str, tuple[Kind, ...]] = {}
            for analysis_id in candidates:
                last = decided.get(analysis_id)
                kinds: list[Kind] = []
                if analysis_id in deferred and last is None:
                    kinds.append("deferred")
                # a dispute after the last moderator decision brings the item back
                if any(
                    last is None or as_utc(f.created_at) > as_utc(last.created_at)
                    for f in disputes.get(analysis_id, [])
                ):
                    kinds.append("disputed")
                if kinds:
                    waiting[analysis_id] = tuple(kinds)
            if filters.kind:
                waiting = {a: kinds for a, kinds in waiting.items() if filters.kind in kinds}
            query = select(AnalysisRecord).where(col(AnalysisRecord.id).in_(list(waiting)))
            if filters.language:
                query = query.where(AnalysisRecord.language == filters.language)
            records = list(session.exec(query.order_by(col(AnalysisRecord.created_at).desc()).limit(QUEUE_LIMIT)))
            sites = self._sites(session, [r.id for r in records], disputes)
        items = []
        for record in records:
            site_key, site_name = sites.get(record.id, (None, None))
            if filters.site and site_key != filters.site:
                continue
            reasons: list[str] = []
            if record.id in deferred and "deferred" in waiting[record.id]:
                reasons += json.loads(deferred[record.id].reasons) or ["deferred"]
            if "disputed" in waiting[record.id]:
                reasons += [f"disputed by a reader: {f.comment or '(no comment)'}" for f in disputes[record.id]]
            excerpt = record.text if len(record.text) <= EXCERPT else record.text[:EXCERPT] + "…"
            items.append(
                QueueItem(
                    analysis_id=record.id,
                    created_at=record.created_at,
                    kinds=waiting[record.id],
                    reasons=tuple(reasons),
                    language=record.language,
                    site_key=site_key,
                    site_name=site_name,
                    excerpt=excerpt,
                )
            )
        return items

    def _sites(
        self, session: Session, analysis_ids: list[str], disputes: dict[str, list[Feedback]]
    ) -> dict[str, tuple[str, str]]:
        """(site key, site name) per analysis: the widget result that asked for it, else the site of a dispute."""
        keys = {a: disputes[a][0].site_key for a in analysis_ids if a in disputes}
        for row in session.exec(select(WidgetResult).where(col(WidgetResult.analysis_id).in_(analysis_ids))):
            keys[row.analysis_id] = row.site_key
        names = {s.key: s.name for s in session.exec(select(Site).where(col(Site.key).in_(set(keys.values()))))}
        return {a: (key, names.get(key, key)) for a, key in keys.items()}

    def neighbours(self, analysis_id: str, filters: QueueFilter = QueueFilter()) -> tuple[str | None, str | None]:
        """(previous, next) item ids around this one in the queue; the first item when it is not in the queue."""
        ids = [item.analysis_id for item in self.queue(filters)]
        if analysis_id not in ids:
            return None, next((i for i in ids if i != analysis_id), None)
        at = ids.index(analysis_id)
        return (ids[at - 1] if at > 0 else None), (ids[at + 1] if at + 1 < len(ids) else None)

    # -- one item ---------------------------------------------------------------------------------
    def item(self, analysis_id: str) -> ReviewItem | None:
        with self._session() as session:
            record = session.get(AnalysisRecord, analysis_id)
            if record is None:
                return None
            automatic = session.get(DecisionRecord, analysis_id)
            feedback = session.exec(
                select(Feedback).where(Feedback.analysis_id == analysis_id).order_by(col(Feedback.created_at))
            )
            decisions = session.exec(
                select(ModeratorDecision)
                .where(ModeratorDecision.analysis_id == analysis_id)
                .order_by(col(ModeratorDecision.created_at), col(ModeratorDecision.id))
            )
            audit = session.exec(
                select(AuditEntry)
                .where(AuditEntry.analysis_id == analysis_id)
                .order_by(col(AuditEntry.created_at), col(AuditEntry.id))
            )
            feedback_rows, decision_rows, audit_rows = tuple(feedback), tuple(decisions), tuple(audit)
            widget = session.exec(select(WidgetResult).where(WidgetResult.analysis_id == analysis_id)).first()
        document = analysis_document(record, json.loads(record.events))
        automatic_explanation = (document.get("explanation") or {}).get("text")
        automatic_label = automatic.label if automatic else None
        state = State(automatic_label or "pending", "engine", None, automatic_explanation)
        if decision_rows:
            last = decision_rows[-1]
            explanation = last.explanation if last.explanation is not None else automatic_explanation
            state = State(last.label, "moderator", last.moderator, explanation)
        return ReviewItem(
            record=record,
            document=document,
            state=state,
            automatic_label=automatic_label,
            feedback=feedback_rows,
            decisions=decision_rows,
            audit=audit_rows,
            site_key=widget.site_key if widget else None,
        )

    def act(
        self,
        item: ReviewItem,
        moderator: str,
        action: str,
        label: str = "",
        explanation: str = "",
        note: str = "",
        seen: int | None = None,
    ) -> AuditEntry:
        """Carries out one action on an item read just before; returns its audit entry.

        confirm: the automatic label stands. overturn: `label` (flagged or not_flagged) replaces it.
        explain: the current label stands with `explanation` as the text readers see. note: only a note.

        `seen` is how many decisions the item had when the moderator's page showed it (default: as read
        now). A decision is stored as number seen + 1; if another moderator stored that number first, this
        one is refused with `Conflict` and the refused attempt is audited as "conflict". Notes never conflict.
        """
        note, explanation = note.strip(), explanation.strip()
        before = item.state
        decision: ModeratorDecision | None = None
        last = item.decisions[-1] if item.decisions else None
        kept_explanation = last.explanation if last else None
        if action == "confirm":
            if item.automatic_label not in LABELS:
                raise CannotConfirm(
                    f"the automatic label is '{item.automatic_label or 'none'}', which is not a decision to confirm; "
                    "overturn to flagged or not_flagged instead"
                )
            decision = self._decision(item, moderator, item.automatic_label, explanation or kept_explanation, note)
        elif action == "overturn":
            if label not in LABELS:
                raise ReviewError(f"cannot overturn to '{label}'; accepted: {', '.join(LABELS)}")
            decision = self._decision(item, moderator, label, explanation or kept_explanation, note)
        elif action == "explain":
            if not explanation:
                raise ReviewError("the explanation is empty; write the text readers should see")
            if before.label not in LABELS:
                raise CannotConfirm(
                    f"the item's label is '{before.label}'; decide flagged or not_flagged first, "
                    "or send the explanation with that decision"
                )
            decision = self._decision(item, moderator, before.label, explanation, note)
        elif action == "note":
            if not note:
                raise ReviewError("the note is empty; write something for the other moderators")
        else:
            raise ReviewError(f"unknown action '{action}'; accepted: {', '.join(ACTIONS)}")
        after = before
        if decision is not None:
            automatic_text = (item.document.get("explanation") or {}).get("text")
            shown = decision.explanation if decision.explanation is not None else automatic_text
            after = State(decision.label, "moderator", moderator, shown)
        entry = AuditEntry(
            actor=moderator,
            action=action,
            analysis_id=item.record.id,
            before=json.dumps(before.to_dict(), ensure_ascii=False),
            after=json.dumps({**after.to_dict(), "note": note or None}, ensure_ascii=False),
        )
        if decision is not None:
            decision.sequence = (len(item.decisions) if seen is None else seen) + 1
        try:
            with self._session() as session:
                if decision is not None:
                    session.add(decision)
                session.add(entry)
                session.commit()  # the decision and its audit entry together, or neither
        except IntegrityError:
            if decision is None:
                raise
            self._refuse(item, entry)
        return entry

    def _refuse(self, item: ReviewItem, attempt: AuditEntry) -> None:
        """Records a decision that lost to another moderator's, then says whose decision stands."""
        refused = AuditEntry(
            actor=attempt.actor,
            action="conflict",
            analysis_id=attempt.analysis_id,
            before=attempt.before,
            after=json.dumps({**json.loads(attempt.after), "refused": attempt.action}, ensure_ascii=False),
        )
        with self._session() as session:
            session.add(refused)
            session.commit()
        current = self.item(item.record.id)
        last = current.decisions[-1] if current and current.decisions else None
        label = last.label.replace("_", " ") if last else ""
        who = f"{last.moderator} decided “{label}” at {last.created_at:%H:%M:%S} UTC" if last else "unknown"
        raise Conflict(
            f"another moderator decided this item while you were looking at it: {who}. "
            "Your decision was not saved (it is in the item's history as a conflict); "
            "read the item again and decide once more if you disagree."
        )

    @staticmethod
    def _decision(
        item: ReviewItem, moderator: str, label: str, explanation: str | None, note: str
    ) -> ModeratorDecision:
        return ModeratorDecision(
            analysis_id=item.record.id,
            moderator=moderator,
            label=label,
            explanation=explanation or None,
            note=note,
            created_at=utcnow(),
        )
