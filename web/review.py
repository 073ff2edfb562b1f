"""The moderators' review queue: which analyses wait for a person, what one item shows, and the actions on it.

An analysis waits for review when its automatic decision was needs_review (deferred) and no moderator has
decided it yet, or when a reader marked its explanation wrong after the last moderator decision (disputed).
Actions write a `ModeratorDecision` when they decide a label and always an `AuditEntry`; audit rows are only
ever inserted. The newest moderator decision overrides the automatic one wherever the widget reads a result
(web/shown.py).

Undo (`undo`): for UNDO_SECONDS after a decision, the moderator who made it may take it back. The undone
decision row is removed, so the state before it (the previous decision, or the automatic one) is what every
reader of decisions sees again, and the next decision takes the freed sequence number; the audit log keeps
both the decision and an "undo" entry with the state it restored. An undo obeys the same conflict rule as a
decision: it names the sequence number it undoes and is refused (and audited as a conflict) when another
decision has come after it.

Analyses from the public demo page (source "demo") stay out of the queue unless `include_demo` is set
(setting `review_demo_analyses`): strangers trying the demo would otherwise fill it beside the sites' posts.

Blocking (SQLAlchemy): routes call `Review` in a thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, case, delete, exists, func, or_
from sqlalchemy import select as core_select  # rows of plain columns (sqlmodel's select types fewer)
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from engine.errors import UneraseError
from engine.vocabulary.model import CATEGORIES
from web import changes, precedents
from web.deferral import raw_cutoff
from web.models import (
    AnalysisRecord,
    AuditEntry,
    DecisionRecord,
    Feedback,
    ModeratorDecision,
    Site,
    SiteTermRule,
    WidgetResult,
    utcnow,
)
from web.results import analysis_document

Kind = Literal["deferred", "disputed", "spot-check"]
KINDS: tuple[Kind, ...] = ("deferred", "disputed", "spot-check")
Action = Literal["confirm", "overturn", "explain", "note"]
ACTIONS: tuple[Action, ...] = ("confirm", "overturn", "explain", "note")
LABELS = ("flagged", "not_flagged")
TermRule = Literal["ambiguous", "exclude", "none"]
TERM_RULES: tuple[TermRule, ...] = ("ambiguous", "exclude", "none")
HIT_VERDICTS = ("contentious", "neutral")
EXCERPT = 120
QUEUE_LIMIT = 500  # a page a person can work through; the filters narrow it
UNDO_SECONDS = 120  # the page offers undo for a few seconds; the server allows a little more for slow hands
DECIDED_LABELS = ("flagged", "not_flagged")


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
    category: str | None = None

    @classmethod
    def parse(
        cls, language: str | None, site: str | None, kind: str | None, category: str | None = None
    ) -> QueueFilter:
        if kind and kind not in KINDS:
            raise ReviewError(f"unknown reason kind '{kind}'; accepted: {', '.join(KINDS)}")
        if category and category not in CATEGORIES:
            raise ReviewError(f"unknown category '{category}'; accepted: {', '.join(CATEGORIES)}")
        checked: Kind | None = next((k for k in KINDS if k == kind), None)
        return cls(language or None, site or None, checked, category or None)

    def query(self) -> dict[str, str]:
        """The filter as query-string values (empty ones left out), to carry it from page to page."""
        values = {"language": self.language, "site": self.site, "kind": self.kind, "category": self.category}
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
    automatic_label: str | None = None
    seen: int = 0  # the sequence number of the item's newest decision (0: none), for actions from the list


@dataclass(frozen=True)
class DecidedFilter:
    """What the "decided" view shows: the newest decision of each item, narrowed by these."""

    label: str | None = None
    moderator: str | None = None
    site: str | None = None
    language: str | None = None
    since: datetime | None = None

    @classmethod
    def parse(
        cls, label: str | None, moderator: str | None, site: str | None, language: str | None, since: str | None
    ) -> DecidedFilter:
        if label and label not in DECIDED_LABELS:
            raise ReviewError(f"unknown label '{label}'; accepted: {', '.join(DECIDED_LABELS)}")
        moment = None
        if since:
            try:
                moment = datetime.fromisoformat(since).replace(tzinfo=UTC)
            except ValueError:
                raise ReviewError(f"'{since}' is not a date; write it as YYYY-MM-DD") from None
        return cls(label or None, moderator or None, site or None, language or None, moment)

    def query(self) -> dict[str, str]:
        values = {
            "label": self.label,
            "moderator": self.moderator,
            "site": self.site,
            "language": self.language,
            "since": self.since.date().isoformat() if self.since else None,
        }
        return {name: value for name, value in values.items() if value}


@dataclass(frozen=True)
class DecidedItem:
    analysis_id: str
    decided_at: datetime
    moderator: str
    label: str
    automatic_label: str | None
    sequence: int
    language: str | None
    site_key: str | None
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


def state_after(document: dict[str, Any], automatic_label: str | None, decision: ModeratorDecision | None) -> State:
    """The item's state with `decision` as its newest moderator decision (None: the automatic one stands)."""
    automatic_explanation = (document.get("explanation") or {}).get("text")
    if decision is None:
        return State(automatic_label or "pending", "engine", None, automatic_explanation)
    explanation = decision.explanation if decision.explanation is not None else automatic_explanation
    return State(decision.label, "moderator", decision.moderator, explanation)


def as_utc(moment: datetime) -> datetime:
    # SQLite gives datetimes back without their zone; they were written in UTC
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def newest_sequence(item: ReviewItem) -> int:
    return item.decisions[-1].sequence if item.decisions else 0


class Review:
    def __init__(self, engine: Engine, include_demo: bool = False) -> None:
        self.engine = engine
        self.include_demo = include_demo

    def _session(self) -> Session:
        # rows go on to templates after the session closes
        return Session(self.engine, expire_on_commit=False)

    # -- the queue ----------------------------------------------------------------------------------
    def queue(self, filters: QueueFilter = QueueFilter(), limit: int = QUEUE_LIMIT) -> list[QueueItem]:
        """Items waiting for a moderator, newest first, selected and filtered in the database."""
        analysis, decision = AnalysisRecord.__table__, DecisionRecord.__table__  # type: ignore[attr-defined]
        widget = WidgetResult.__table__  # type: ignore[attr-defined]
        decided = (
            select(
                ModeratorDecision.analysis_id,
                func.max(ModeratorDecision.created_at).label("at"),
                func.max(ModeratorDecision.sequence).label("sequence"),
            )
            .group_by(col(ModeratorDecision.analysis_id))
            .subquery()
        )
        disputed = (
            select(Feedback.analysis_id, func.max(Feedback.created_at).label("at"))
            .where(col(Feedback.helpful).is_(False))
            .group_by(col(Feedback.analysis_id))
            .subquery()
        )
        undecided = decided.c.at.is_(None)
        kinds = {
            "deferred": and_(undecided, or_(decision.c.label == "needs_review", *self._site_deferrals())),
            "disputed": and_(disputed.c.at.is_not(None), or_(undecided, disputed.c.at > decided.c.at)),
            "spot-check": and_(undecided, analysis.c.spot_check.is_(True), decision.c.label != "needs_review"),
        }
        wanted = [kinds[filters.kind]] if filters.kind else list(kinds.values())
        query = (
            core_select(
                analysis.c.id,
                analysis.c.created_at,
                analysis.c.language,
                func.substr(analysis.c.text, 1, EXCERPT + 1).label("excerpt"),
                decision.c.label,
                decision.c.confidence,
                decision.c.reasons,
                widget.c.site_key,
                decided.c.sequence,
                *(
                    case((condition, True), else_=False).label(name.replace("-", "_"))
                    for name, condition in kinds.items()
                ),
            )
            .select_from(analysis)
            .outerjoin(decision, decision.c.analysis_id == analysis.c.id)
            .outerjoin(widget, widget.c.analysis_id == analysis.c.id)
            .outerjoin(decided, decided.c.analysis_id == analysis.c.id)
            .outerjoin(disputed, disputed.c.analysis_id == analysis.c.id)
            .where(or_(*wanted))
        )
        if not self.include_demo:
            query = query.where(analysis.c.source != "demo")
        if filters.language:
            query = query.where(analysis.c.language == filters.language)
        if filters.site:
            query = query.where(widget.c.site_key == filters.site)
        if filters.category:
            # categories are stored comma-separated: match whole names only
            query = query.where(("," + decision.c.categories + ",").contains(f",{filters.category},"))
        query = query.order_by(analysis.c.created_at.desc(), analysis.c.id).limit(limit)
        with self._session() as session:
            rows = list(session.execute(query))
            ids = [row.id for row in rows]
            comments: dict[str, list[Feedback]] = {}
            for feedback in session.exec(
                select(Feedback)
                .where(col(Feedback.analysis_id).in_(ids), col(Feedback.helpful).is_(False))
                .order_by(col(Feedback.created_at))
            ):
                comments.setdefault(feedback.analysis_id, []).append(feedback)
            keys = {row.site_key for row in rows if row.site_key}
            names = {s.key: s.name for s in session.exec(select(Site).where(col(Site.key).in_(keys)))}
        items = []
        for row in rows:
            kinds_of = tuple(kind for kind in KINDS if getattr(row, kind.replace("-", "_"), False))
            reasons: list[str] = []
            if "deferred" in kinds_of:
                reasons += json.loads(row.reasons or "[]") or ["deferred"]
                if row.label != "needs_review":
                    reasons.append(f"deferred by the site's threshold: confidence {row.confidence:.2f}")
            if "disputed" in kinds_of:
                reasons += [f"disputed by a reader: {f.comment or '(no comment)'}" for f in comments.get(row.id, [])]
            if "spot-check" in kinds_of:
                reasons.append(f"spot check: an automatic “{row.label.replace('_', ' ')}” drawn at random")
            excerpt = row.excerpt if len(row.excerpt) <= EXCERPT else row.excerpt[:EXCERPT] + "…"
            items.append(
                QueueItem(
                    analysis_id=row.id,
                    created_at=row.created_at,
                    kinds=kinds_of,
                    reasons=tuple(reasons),
                    language=row.language,
                    site_key=row.site_key,
                    site_name=names.get(row.site_key, row.site_key) if row.site_key else None,
                    excerpt=excerpt,
                    automatic_label=row.label,
                    seen=int(row.sequence or 0),
                )
            )
        return items

    def decided(self, filters: DecidedFilter = DecidedFilter(), limit: int = QUEUE_LIMIT) -> list[DecidedItem]:
        """The items moderators decided, each with its newest decision, newest first."""
        analysis, automatic = AnalysisRecord.__table__, DecisionRecord.__table__  # type: ignore[attr-defined]
        moderator, widget = ModeratorDecision.__table__, WidgetResult.__table__  # type: ignore[attr-defined]
        newest = (
            core_select(moderator.c.analysis_id, func.max(moderator.c.sequence).label("sequence"))
            .group_by(moderator.c.analysis_id)
            .subquery()
        )
        query = (
            core_select(
                moderator.c.analysis_id,
                moderator.c.created_at,
                moderator.c.moderator,
                moderator.c.label,
                moderator.c.sequence,
                automatic.c.label.label("automatic_label"),
                analysis.c.language,
                widget.c.site_key,
                func.substr(analysis.c.text, 1, EXCERPT + 1).label("excerpt"),
            )
            .select_from(moderator)
            .join(
                newest,
                and_(newest.c.analysis_id == moderator.c.analysis_id, newest.c.sequence == moderator.c.sequence),
            )
            .join(analysis, analysis.c.id == moderator.c.analysis_id)
            .outerjoin(automatic, automatic.c.analysis_id == moderator.c.analysis_id)
            .outerjoin(widget, widget.c.analysis_id == moderator.c.analysis_id)
        )
        if filters.label:
            query = query.where(moderator.c.label == filters.label)
        if filters.moderator:
            query = query.where(moderator.c.moderator == filters.moderator)
        if filters.site:
            query = query.where(widget.c.site_key == filters.site)
        if filters.language:
            query = query.where(analysis.c.language == filters.language)
        if filters.since:
            query = query.where(moderator.c.created_at >= filters.since)
        query = query.order_by(moderator.c.created_at.desc(), moderator.c.id.desc()).limit(limit)
        with self._session() as session:
            rows = list(session.execute(query))
        return [
            DecidedItem(
                analysis_id=row.analysis_id,
                decided_at=row.created_at,
                moderator=row.moderator,
                label=row.label,
                automatic_label=row.automatic_label,
                sequence=row.sequence,
                language=row.language,
                site_key=row.site_key,
                excerpt=row.excerpt if len(row.excerpt) <= EXCERPT else row.excerpt[:EXCERPT] + "…",
            )
            for row in rows
        ]

    def _site_deferrals(self) -> list[ColumnElement[bool]]:
        """Conditions for decisions a site's own τ defers (widget results below the site's raw cutoff)."""
        decision, widget = DecisionRecord.__table__, WidgetResult.__table__  # type: ignore[attr-defined]
        with self._session() as session:
            sites = list(session.exec(select(Site)))
        return [
            and_(
                widget.c.site_key == site.key,
                decision.c.confidence < raw_cutoff(site),
                decision.c.label != "needs_review",
            )
            for site in sites
        ]

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
        automatic_label = automatic.label if automatic else None
        state = state_after(document, automatic_label, decision_rows[-1] if decision_rows else None)
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
            # `seen` is the sequence number of the newest decision the moderator's page showed (0: none)
            decision.sequence = (newest_sequence(item) if seen is None else seen) + 1
        try:
            with self._session() as session:
                if decision is not None:
                    session.add(decision)
                    changes.record(session, changes.DECISION, item.record.id)  # other processes' widgets
                session.add(entry)
                session.commit()  # the decision and its audit entry together, or neither
        except IntegrityError:
            if decision is None:
                raise
            self._refuse(item, entry)
        return entry

    def undoable(self, item: ReviewItem, moderator: str, now: datetime | None = None) -> ModeratorDecision | None:
        """The item's newest decision when `moderator` made it less than UNDO_SECONDS ago, else None."""
        last = item.decisions[-1] if item.decisions else None
        if last is None or last.moderator != moderator:
            return None
        age = (now or datetime.now(UTC)) - as_utc(last.created_at)
        return last if age <= timedelta(seconds=UNDO_SECONDS) else None

    def undo(self, item: ReviewItem, moderator: str, sequence: int, now: datetime | None = None) -> AuditEntry:
        """Takes back the decision numbered `sequence`, restoring the state before it; returns the audit entry.

        Refused (ReviewError) when it is not this moderator's or is older than UNDO_SECONDS; refused as a
        `Conflict` (and audited as one) when another decision came after it, even at the same moment."""
        last = item.decisions[-1] if item.decisions else None
        if last is None or last.sequence < sequence:
            raise ReviewError("there is no such decision to undo; the item may have been undone already")
        undone = next((d for d in item.decisions if d.sequence == sequence), None)
        previous = item.decisions[-2] if len(item.decisions) > 1 else None
        restored = state_after(item.document, item.automatic_label, previous)
        entry = AuditEntry(
            actor=moderator,
            action="undo",
            analysis_id=item.record.id,
            before=json.dumps(item.state.to_dict(), ensure_ascii=False),
            after=json.dumps({**restored.to_dict(), "note": None, "undoes": sequence}, ensure_ascii=False),
        )
        if last.sequence > sequence:
            self._refuse(item, entry)
        if undone is None or undone.moderator != moderator:
            who = undone.moderator if undone else "someone else"
            raise ReviewError(f"only the moderator who made a decision can undo it ({who}); decide again instead")
        if self.undoable(item, moderator, now) is None:
            raise ReviewError(
                f"a decision can be undone for {UNDO_SECONDS} seconds after it was made; decide again instead"
            )
        table = ModeratorDecision.__table__  # type: ignore[attr-defined]
        later = exists().where(table.c.analysis_id == item.record.id, table.c.sequence > sequence)
        with self._session() as session:
            # removed only while nothing came after it: the same check a decision's unique sequence makes
            removed = session.execute(delete(table).where(table.c.id == undone.id, ~later)).rowcount  # type: ignore[attr-defined]
            if removed != 1:
                session.rollback()
            else:
                session.add(entry)
                changes.record(session, changes.DECISION, item.record.id)
                session.commit()  # the removal and its audit entry together, or neither
        if removed != 1:
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

    def set_term_rule(self, item: ReviewItem, moderator: str, term_id: str, rule: str) -> AuditEntry:
        """Marks one of the item's terms ambiguous or excluded for the item's site ("none" lifts the rule)."""
        if rule not in TERM_RULES:
            raise ReviewError(f"unknown term rule '{rule}'; accepted: {', '.join(TERM_RULES)}")
        if item.site_key is None:
            raise ReviewError("this text did not come from a site's widget; term rules apply to one site's posts")
        terms = {hit["term_id"]: hit["term"] for hit in item.document.get("hits", [])}
        if term_id not in terms:
            raise ReviewError(f"the term '{term_id}' is not among this text's hits; accepted: {', '.join(terms)}")
        with self._session() as session:
            current = session.get(SiteTermRule, (item.site_key, term_id))
            before = current.rule if current else "none"
            if current is not None:
                session.delete(current)
                session.flush()
            if rule != "none":
                session.add(SiteTermRule(site_key=item.site_key, term_id=term_id, rule=rule, moderator=moderator))
            entry = AuditEntry(
                actor=moderator,
                action="term-rule",
                analysis_id=item.record.id,
                before=json.dumps({"site": item.site_key, "term": terms[term_id], "rule": before}, ensure_ascii=False),
                after=json.dumps({"site": item.site_key, "term": terms[term_id], "rule": rule}, ensure_ascii=False),
            )
            session.add(entry)
            changes.record(session, changes.SITE, item.site_key)  # the site's scope, in every process
            session.commit()
        return entry

    def learn(self, item: ReviewItem, label: str, chosen: dict[str, str], moderator: str) -> int:
        """Keeps the decision's per-hit verdicts as labelled examples (precedents) for later hits of the same
        terms, replacing what an earlier decision on this item said. Returns how many were kept."""
        verdicts = self.hit_verdicts(item, label, chosen)
        rows = precedents.from_document(item.document, verdicts, moderator, item.site_key)
        precedents.replace(self.engine, item.record.id, rows)
        return len(rows)

    def term_rules(self, item: ReviewItem) -> dict[str, str]:
        """term id -> rule, for the item's terms on its site."""
        if item.site_key is None:
            return {}
        with self._session() as session:
            rows = session.exec(select(SiteTermRule).where(SiteTermRule.site_key == item.site_key))
            return {row.term_id: row.rule for row in rows}

    @staticmethod
    def hit_verdicts(item: ReviewItem, label: str, chosen: dict[str, str]) -> dict[str, str]:
        """What the moderator's decision says about each hit: contentious or neutral, or nothing when it does not
        say (then no labelled example is kept). `chosen` holds the item page's per-hit choices; "auto" or a
        missing one is read from the decision: not flagged makes every hit used as an attack neutral (a quoted or
        reclaimed one says nothing about the word's sense, engine.uses); flagged keeps the hits the
        analysis found contentious, and makes a lone hit contentious when nothing else explains the flag."""
        hits = item.document.get("hits", [])
        automatic = {hit["id"]: (hit.get("verdict") or {}).get("status") for hit in hits}
        targeting = (item.document.get("targeting") or {}).get("status")
        verdicts: dict[str, str] = {}
        for hit in hits:
            choice = chosen.get(hit["id"], "auto")
            if choice in HIT_VERDICTS:
                verdicts[hit["id"]] = choice
            elif choice != "auto":
                continue  # "skip": the moderator says nothing about this hit
            elif label == "not_flagged":
                # a quoted, reported or reclaimed word was not cleared for its sense but for its use: no example
                if (hit.get("verdict") or {}).get("use", "attack") == "attack":
                    verdicts[hit["id"]] = "neutral"
            elif automatic.get(hit["id"]) == "contentious" or (len(hits) == 1 and targeting != "hateful"):
                verdicts[hit["id"]] = "contentious"
        return verdicts

    def relearn(self, item: ReviewItem) -> int:
        """After an undo: the precedents the item's decision before it would have given (none for the engine's)."""
        current = self.item(item.record.id)
        if current is None or not current.decisions:
            precedents.replace(self.engine, item.record.id, [])
            return 0
        return self.learn(current, current.decisions[-1].label, {}, current.decisions[-1].moderator)

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
