"""The stored records: analyses with their hits, verdicts and decision; batch jobs and their rows.

An analysis keeps its whole event stream (`events`, JSON) so a permalink or a late listener
replays exactly what the first one saw; hits, verdicts and the decision are also stored as rows
so they can be counted and searched.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Index
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a Z; a database that drops the zone (SQLite) gives back UTC anyway."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="seconds") + "Z"


class AnalysisRecord(SQLModel, table=True):
    """One analysis. While it runs, one process holds it (`owner`, until `lease_until`, renewed by a heartbeat) and
    appends its events to `analysis_event` as it produces them; when it is complete the whole stream is in `events`
    and the claim is cleared (web/runs.py, docs/deploy.md)."""

    __tablename__ = "analysis"
    __table_args__ = (Index("ix_analysis_status_lease", "status", "lease_until"),)

    id: str = Field(primary_key=True, max_length=32)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    status: str = Field(default="pending", max_length=16)  # pending, running, complete, failed
    source: str = Field(default="api", max_length=16)  # demo, api
    text: str
    requested_language: str | None = Field(default=None, max_length=16)
    language: str | None = Field(default=None, max_length=16)
    mode: str = Field(default="fast", max_length=16)
    events: str = "[]"  # JSON list of {"type": ..., "data": {...}}
    elapsed_ms: float | None = None
    spot_check: bool = Field(default=False, index=True)  # drawn at random for a moderator's spot check
    owner: str | None = Field(default=None, max_length=80, index=True)  # the node running it (Services.node)
    lease_until: float | None = None  # epoch seconds; a claim not renewed by then may be taken over
    detached: bool = False  # runs to the end with nobody listening (respond-async, widget checks)


class AnalysisEvent(SQLModel, table=True):
    """An event of an analysis that is still running, stored as it is produced. `seq` is its position in the stream
    and its SSE event id on every node; the primary key lets only one process write a position, which fences off a
    process that lost its claim without knowing. The rows are deleted when the whole stream is stored."""

    __tablename__ = "analysis_event"

    analysis_id: str = Field(primary_key=True, max_length=32)
    seq: int = Field(primary_key=True)
    type: str = Field(max_length=32)
    data: str  # JSON


class HitRecord(SQLModel, table=True):
    __tablename__ = "hit"

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: str = Field(foreign_key="analysis.id", index=True, max_length=32)
    hit_id: str = Field(max_length=16)
    start: int
    end: int
    surface: str
    term: str
    term_id: str
    issue_id: str
    categories: str  # comma-separated
    ambiguous: bool
    obfuscated: bool


class VerdictRecord(SQLModel, table=True):
    __tablename__ = "verdict"

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: str = Field(foreign_key="analysis.id", index=True, max_length=32)
    hit_id: str = Field(max_length=16)
    status: str = Field(max_length=16)
    confidence: float
    decided_by: str
    explanation: str = ""


class DecisionRecord(SQLModel, table=True):
    __tablename__ = "decision"

    analysis_id: str = Field(foreign_key="analysis.id", primary_key=True, max_length=32)
    label: str = Field(max_length=16, index=True)
    severity: str = Field(max_length=16)
    confidence: float
    categories: str  # comma-separated
    reasons: str  # JSON list
    proposed_label: str | None = Field(default=None, max_length=16)  # deferred by τ: the label it would have had


class BatchJob(SQLModel, table=True):
    __tablename__ = "batch_job"

    id: str = Field(primary_key=True, max_length=32)
    created_at: datetime = Field(default_factory=utcnow)
    finished_at: datetime | None = None
    filename: str
    format: str = Field(max_length=8)
    mode: str = Field(default="fast", max_length=16)
    status: str = Field(default="queued", max_length=16)  # queued, running, complete
    total_rows: int = 0
    stats: str | None = None  # JSON, computed when the job completes
    language: str | None = Field(default=None, max_length=16)  # of records that give none; None: detected
    # records whose language cannot be detected (short titles) are analysed in this one; None: they fail
    fallback_language: str | None = Field(default=None, max_length=16)
    # the node computing the statistics once no row is pending, and until when (web/batch_claims.py)
    claimed_by: str | None = Field(default=None, max_length=128)
    lease_until: float | None = None  # epoch seconds (nodes' clocks are NTP-synced: docs/deploy.md)


class BatchRow(SQLModel, table=True):
    __tablename__ = "batch_row"
    __table_args__ = (Index("ix_batch_row_job_status_id", "job_id", "status", "id"),)

    id: int | None = Field(default=None, primary_key=True)
    job_id: str = Field(foreign_key="batch_job.id", max_length=32)
    line: int
    record_id: str
    text: str = ""
    language: str | None = Field(default=None, max_length=16)
    status: str = Field(default="pending", max_length=16)  # pending, done, error
    label: str | None = Field(default=None, max_length=16)
    result: str | None = None  # JSON summary of the analysis
    error: str | None = None
    # the node (Services.node) that claimed the row, kept once written: who analysed it (web/batch_claims.py)
    claimed_by: str | None = Field(default=None, max_length=128)
    lease_until: float | None = None  # epoch seconds; a pending row whose lease has passed may be claimed again


class Site(SQLModel, table=True):
    """A forum that embeds the widget. The key is public (it is in the page); the origins limit who may use it."""

    __tablename__ = "site"

    key: str = Field(primary_key=True, max_length=40)
    name: str
    allowed_origins: str = "[]"  # JSON list of origins, e.g. ["https://forum.example"]
    languages: str = "[]"  # JSON list; empty: every loaded language
    mode: str = Field(default="fast", max_length=16)
    threshold: float = 0.5
    store: bool = True  # False: texts and results are kept in memory only, never written to the database
    show_checked: bool = False
    # what readers see on a post nothing could decide (needs_review): nothing, "about" (a neutral "About these
    # words") or "review" ("Under review"); moderators always find it in the queue (web.shown.button)
    show_undecided: str = Field(default="nothing", max_length=16)
    rate_limit_per_minute: int = 120
    created_at: datetime = Field(default_factory=utcnow)
    # what each outcome is worth to the site (engine.deferral.Values; docs/deferral.md gives the defaults' reasons)
    value_tp: float = 1.0
    value_tn: float = 1.0
    value_fp: float = -4.0
    value_fn: float = -2.0
    value_r: float = -0.5
    # JSON {"method": "platt", "a": .., "b": ..} or {"method": "temperature", "t": ..}; empty: uncalibrated
    calibration: str = ""


class SiteTermRule(SQLModel, table=True):
    """A site's moderators' choice about one vocabulary term: treat it as ambiguous, or exclude it."""

    __tablename__ = "site_term_rule"

    site_key: str = Field(foreign_key="site.key", primary_key=True, max_length=40)
    term_id: str = Field(primary_key=True, max_length=200)
    rule: str = Field(max_length=16)  # ambiguous, exclude
    moderator: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=utcnow)


class WidgetResult(SQLModel, table=True):
    """Which analysis answers a post, keyed by content and configuration, so nothing is analysed twice."""

    __tablename__ = "widget_result"

    cache_key: str = Field(primary_key=True, max_length=64)
    site_key: str = Field(foreign_key="site.key", index=True, max_length=40)
    analysis_id: str = Field(foreign_key="analysis.id", index=True, max_length=32)  # the review queue joins on it
    created_at: datetime = Field(default_factory=utcnow)


class Feedback(SQLModel, table=True):
    """A reader's "Helpful" / "This is wrong" on a widget explanation, kept for moderators: one vote per reader
    and analysis (a repeat replaces it)."""

    __tablename__ = "feedback"
    # NULL readers (votes stored before readers were told apart) never collide: old databases get the index too
    __table_args__ = (Index("uq_feedback_reader", "site_key", "analysis_id", "reader", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    site_key: str = Field(foreign_key="site.key", index=True, max_length=40)
    analysis_id: str = Field(max_length=32, index=True)
    post_id: str = Field(default="", max_length=200)
    helpful: bool
    comment: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    # keyed hash of the reader (the widget's reader token, else the client's address) with the site and analysis
    # (web.sites.Sites.reader): neither is stored, and one reader's votes on two posts cannot be linked
    reader: str | None = Field(default=None, max_length=64)


class ServerSecret(SQLModel, table=True):
    """A random secret made once per database and shared by every worker (the key of reader hashes)."""

    __tablename__ = "server_secret"

    name: str = Field(primary_key=True, max_length=32)
    value: str = Field(max_length=128)


class User(SQLModel, table=True):
    """A moderator or admin who logs in to the review and admin pages. Names are stored in lower case."""

    __tablename__ = "user_account"  # "user" is a reserved word in PostgreSQL

    id: int | None = Field(default=None, primary_key=True)
    username: str = Field(max_length=64, unique=True, index=True)
    password_hash: str = Field(max_length=255)
    role: str = Field(default="moderator", max_length=16)  # admin, moderator
    disabled: bool = False
    created_at: datetime = Field(default_factory=utcnow)


class LoginSession(SQLModel, table=True):
    """A signed-in browser. Only the hash of the cookie's token is kept, so a leaked table opens no session."""

    __tablename__ = "login_session"

    token_hash: str = Field(primary_key=True, max_length=64)
    username: str = Field(foreign_key="user_account.username", index=True, max_length=64)
    csrf_token: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=utcnow)
    expires_at: datetime = Field(index=True)


class ModeratorDecision(SQLModel, table=True):
    """A moderator's label for an analysis. The newest one per analysis is what the widget shows; older ones
    stay as the item's history."""

    __tablename__ = "moderator_decision"

    __table_args__ = (Index("uq_moderator_decision_sequence", "analysis_id", "sequence", unique=True),)

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: str = Field(foreign_key="analysis.id", index=True, max_length=32)
    # 1 for an item's first decision, 2 for the next...: two moderators deciding from the same state both
    # write the same number, and the database keeps only the first (web.review, conflicts)
    sequence: int = 1
    moderator: str = Field(max_length=64)
    label: str = Field(max_length=16)  # flagged, not_flagged
    explanation: str | None = None  # None: the automatic explanation stands
    note: str = ""
    created_at: datetime = Field(default_factory=utcnow, index=True)


class AuditEntry(SQLModel, table=True):
    """One moderator action, written once and never changed: who did what to which item, and the state
    before and after (JSON)."""

    __tablename__ = "audit_entry"

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    actor: str = Field(max_length=64)
    action: str = Field(max_length=16)  # confirm, overturn, explain, note, term-rule; "conflict" for a refused one
    analysis_id: str = Field(index=True, max_length=32)
    before: str  # JSON
    after: str  # JSON


class Precedent(SQLModel, table=True):
    """A moderator's verdict on one hit in its context: a labelled example for later hits of the same term.

    `context` is the text around the hit (web.precedents); it is what full-text search compares.
    """

    __tablename__ = "precedent"

    id: int | None = Field(default=None, primary_key=True)
    analysis_id: str = Field(foreign_key="analysis.id", index=True, max_length=32)
    hit_id: str = Field(max_length=16)
    term_id: str = Field(index=True, max_length=200)
    issue_id: str = Field(max_length=200)
    language: str = Field(max_length=16)
    site_key: str | None = Field(default=None, index=True, max_length=40)
    surface: str
    context: str
    verdict: str = Field(max_length=16)  # contentious, neutral
    moderator: str = Field(max_length=64)
    created_at: datetime = Field(default_factory=utcnow)


class Evaluation(SQLModel, table=True):
    """An evaluation on a labelled file, or a fairness audit, run from /admin/evaluations (web/evaluations.py).

    Its texts are analysed as a batch job (`job_id`: progress, row errors and downloads are the batch's); this
    row keeps what the batch does not: the labels (or the audit's tuples), the configuration the texts were
    analysed with, and the report, computed once when the job is complete.
    """

    __tablename__ = "evaluation"

    id: str = Field(primary_key=True, max_length=32)
    created_at: datetime = Field(default_factory=utcnow, index=True)
    created_by: str = Field(default="", max_length=64)
    kind: str = Field(default="eval", max_length=8)  # eval, audit
    job_id: str = Field(foreign_key="batch_job.id", max_length=32)
    filename: str = Field(default="", max_length=200)
    review_as: str = Field(default="separate", max_length=16)
    options: str = "{}"  # JSON: the columns and label values chosen
    labels: str = "{}"  # JSON: per line, the row's label, language, group and term labels (audit: its case)
    vocabulary_version: str = Field(default="", max_length=64)
    prompt_version: str = Field(default="", max_length=64)
    models: str = Field(default="none", max_length=400)
    mode: str = Field(default="fast", max_length=16)
    threshold: float = 0.5
    report: str | None = None  # JSON, computed when the job is complete


# -- state the processes sharing this database keep here (web/shared.py, web/answer_cache.py, web/changes.py) --
# Times are wall-clock seconds (time.time()) as floats: the same arithmetic in SQLite and PostgreSQL.


class RateBucket(SQLModel, table=True):
    """One client's token bucket for one limit (web.shared.DatabaseBuckets); `key` is a hash, not the address."""

    __tablename__ = "rate_bucket"

    key: str = Field(primary_key=True, max_length=64)
    tokens: float  # what is left after the last request
    updated: float = Field(index=True)  # when the last request came (idle buckets are full and purged)
    granted: bool = True  # whether the last request got a token (read back by the same statement)


class LoginFailure(SQLModel, table=True):
    """One failed login, counted for its client and for its user name (each as a hash: web.shared)."""

    __tablename__ = "login_failure"
    __table_args__ = (Index("ix_login_failure_key_at", "key", "at"),)

    id: int | None = Field(default=None, primary_key=True)
    key: str = Field(max_length=64)
    at: float = Field(index=True)


class CachedAnswer(SQLModel, table=True):
    """A model's parsed answer (engine.cache keys), shared by every node of a PostgreSQL deployment."""

    __tablename__ = "llm_answer"

    key: str = Field(primary_key=True, max_length=64)
    expires: float = Field(index=True)
    value: str  # JSON


class Change(SQLModel, table=True):
    """A change other processes must hear of (a moderator's decision, a site's settings), written in the same
    transaction as the change; each process reads the new rows every half second (web/changes.py). SQLite's
    AUTOINCREMENT keeps ids from being reused once old rows are pruned."""

    __tablename__ = "change_feed"
    __table_args__ = {"sqlite_autoincrement": True}

    id: int | None = Field(default=None, primary_key=True)
    kind: str = Field(max_length=16)  # decision (key: analysis id), site (key: site key)
    key: str = Field(max_length=64)
    at: float = Field(index=True)
