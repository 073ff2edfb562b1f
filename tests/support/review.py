"""The review queue in tests: posts that land in it, a moderator's action, its audit trail."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlmodel import Session, col, select

from web.models import AuditEntry

from .accounts import session_csrf

DEFERRED = "the strike left him crippled"  # an ambiguous term and no model: needs_review
FLAGGED = "a faggot and a <b>junkie</b>"


def audit(api: TestClient, analysis_id: str) -> list[AuditEntry]:
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        query = select(AuditEntry).where(AuditEntry.analysis_id == analysis_id).order_by(col(AuditEntry.id))
        return list(db.exec(query))


def act(api: TestClient, analysis_id: str, **form: str) -> Any:
    """A moderator's form post on the item (the signed-in session's CSRF token added)."""
    data = {"csrf": session_csrf(api), **form}
    return api.post(f"/review/{analysis_id}", data=data, follow_redirects=False)
