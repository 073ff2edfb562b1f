"""Accounts and sessions in tests through the app: a user, a login, the session's CSRF token."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from web.auth import Accounts
from web.models import User

PASSWORD = "correct horse battery"


def accounts_of(api: TestClient) -> Accounts:
    return Accounts(api.app.state.services.store.engine)  # type: ignore[attr-defined]


def add_user(api: TestClient, name: str, role: str = "moderator", password: str = PASSWORD) -> User:
    return accounts_of(api).create(name, password, role)


def login(api: TestClient, name: str, password: str = PASSWORD, next: str = "/", **headers: str) -> Any:
    form = api.get("/login", headers=headers)
    assert form.status_code == 200 and 'name="csrf"' in form.text
    data = {"username": name, "password": password, "csrf": form.context["csrf"], "next": next}  # type: ignore[attr-defined]
    return api.post("/login", data=data, headers=headers, follow_redirects=False)


def session_csrf(api: TestClient) -> str:
    page = api.get("/account")
    assert page.status_code == 200, page.text
    token: str = page.context["signed_in"].csrf_token  # type: ignore[attr-defined]
    return token
