"""Accounts, sessions, CSRF and login limits, through the real app, a real SQLite file and real argon2."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Annotated

import pytest
from argon2 import PasswordHasher
from fastapi import Depends
from fastapi.testclient import TestClient
from sqlmodel import Session, select

from web.app import create_app
from web.auth import SESSION_COOKIE, Accounts, require_role, safe_next
from web.cli import main as cli_main
from web.db import make_engine
from web.models import LoginSession, User, utcnow
from web.settings import get_settings

from .support.accounts import PASSWORD, accounts_of, add_user, login, session_csrf
from .webapp import client, settings

TOKEN = "test-admin-token"


@pytest.fixture
def api(tmp_path: Path) -> Iterator[TestClient]:
    with client(tmp_path, admin_token=TOKEN, login_attempts=3, trust_forwarded_for=True) as test_client:
        yield test_client


def test_user_commands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("UNERASE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        monkeypatch.setattr("sys.stdin", io.StringIO("too short\n"))
        assert cli_main(["user", "create", "Ann", "--role", "admin", "--password-stdin"]) == 2
        assert "at least 12 characters; this one has 9" in capsys.readouterr().err
        monkeypatch.setattr("sys.stdin", io.StringIO(PASSWORD + "\n"))
        assert cli_main(["user", "create", "Ann", "--role", "admin", "--password-stdin"]) == 0
        assert "created admin 'ann'" in capsys.readouterr().out
        assert cli_main(["user", "create", "ann", "--password-stdin"]) == 2
        assert "already exists" in capsys.readouterr().err
        assert cli_main(["user", "create", "bad name!", "--password-stdin"]) == 2
        assert "'bad name!' is not a usable user name" in capsys.readouterr().err

        answers = iter(["moderator password", "moderator password"])
        monkeypatch.setattr("getpass.getpass", lambda prompt="": next(answers))
        assert cli_main(["user", "create", "bob"]) == 0
        capsys.readouterr()
        assert cli_main(["user", "list", "--json"]) == 0
        listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        assert listed == [
            {"username": "ann", "role": "admin", "disabled": False},
            {"username": "bob", "role": "moderator", "disabled": False},
        ]

        answers = iter(["a new password 1", "a new password 2"])
        assert cli_main(["user", "passwd", "bob"]) == 2
        assert "the two passwords differ" in capsys.readouterr().err
        answers = iter(["a new password 1", "a new password 1"])
        assert cli_main(["user", "passwd", "bob"]) == 0
        assert cli_main(["user", "passwd", "nobody"]) == 2
        assert "no user is named 'nobody'" in capsys.readouterr().err
        accounts = Accounts(make_engine(get_settings().resolved_database_url))
        assert accounts.authenticate("bob", "moderator password") is None
        assert accounts.authenticate("Bob", "a new password 1") is not None

        assert cli_main(["user", "disable", "bob"]) == 0
        capsys.readouterr()
        assert accounts.authenticate("bob", "a new password 1") is None
        assert cli_main(["user", "list"]) == 0
        assert capsys.readouterr().out.splitlines() == ["ann\tadmin\tactive", "bob\tmoderator\tdisabled"]
    finally:
        get_settings.cache_clear()


def test_enable_lets_a_disabled_account_log_in_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("UNERASE_DATA_DIR", str(tmp_path))
    get_settings.cache_clear()
    try:
        accounts = Accounts(make_engine(get_settings().resolved_database_url))
        accounts.create("lea", PASSWORD, "moderator")
        assert cli_main(["user", "disable", "lea"]) == 0
        assert accounts.authenticate("lea", PASSWORD) is None
        capsys.readouterr()

        assert cli_main(["user", "enable", "LEA"]) == 0
        assert "enabled 'lea'" in capsys.readouterr().out
        assert accounts.authenticate("lea", PASSWORD) is not None
        assert accounts.authenticate("lea", "not her password") is None  # enabling changes nothing else
        assert cli_main(["user", "enable", "lea"]) == 0  # enabling an active account is harmless
        capsys.readouterr()
        assert cli_main(["user", "list"]) == 0
        assert capsys.readouterr().out.splitlines() == ["lea\tmoderator\tactive"]

        assert cli_main(["user", "enable", "nobody"]) == 2
        assert "no user is named 'nobody'" in capsys.readouterr().err
    finally:
        get_settings.cache_clear()


def test_an_enabled_account_needs_a_new_login(api: TestClient) -> None:
    add_user(api, "noa")
    assert login(api, "noa").status_code == 303
    old_cookie = api.cookies[SESSION_COOKIE]
    accounts_of(api).disable("noa")
    accounts_of(api).enable("noa")
    api.cookies.set(SESSION_COOKIE, old_cookie)
    assert api.get("/api/v1/me").status_code == 401  # the session that disable ended does not come back
    assert login(api, "noa").status_code == 303
    assert api.get("/api/v1/me").json()["username"] == "noa"


def test_login_sets_a_protected_cookie_and_logout_ends_the_session(api: TestClient) -> None:
    add_user(api, "mia")
    assert api.get("/api/v1/me").status_code == 401
    response = login(api, "Mia", next="/account")
    assert response.status_code == 303 and response.headers["location"] == "/account"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE + "="))
    flags = [part.strip().lower() for part in cookie.split(";")]
    assert "httponly" in flags and "samesite=lax" in flags and "path=/" in flags and "max-age=43200" in flags
    assert "secure" not in flags  # plain http here; see the https test
    raw = api.cookies[SESSION_COOKIE]
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        stored = db.exec(select(LoginSession)).one()
    assert stored.username == "mia" and stored.token_hash != raw and len(stored.token_hash) == 64
    me = api.get("/api/v1/me").json()
    assert me["username"] == "mia" and me["role"] == "moderator"

    csrf = session_csrf(api)
    assert api.post("/logout", follow_redirects=False).status_code == 403
    assert api.post("/logout", data={"csrf": "forged"}, follow_redirects=False).status_code == 403
    assert api.get("/api/v1/me").status_code == 200  # refused logouts changed nothing
    out = api.post("/logout", data={"csrf": csrf}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    api.cookies.set(SESSION_COOKIE, raw)  # the old token, replayed
    refused = api.get("/api/v1/me")
    assert refused.status_code == 401
    assert refused.headers["content-type"] == "application/problem+json" and "log in" in refused.json()["detail"]


def test_session_cookie_is_secure_over_https(tmp_path: Path) -> None:
    with TestClient(create_app(settings(tmp_path)), base_url="https://testserver") as api:
        add_user(api, "sam")
        assert "secure" in api.get("/login").headers["set-cookie"].lower()
        response = login(api, "sam")
        cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith(SESSION_COOKIE + "="))
        assert "secure" in [part.strip().lower() for part in cookie.split(";")]


def test_wrong_password_and_unknown_user_get_the_same_answer(api: TestClient) -> None:
    add_user(api, "quinn7")
    wrong = login(api, "quinn7", "not the password")
    unknown = login(api, "nobody9", "not the password")
    assert wrong.status_code == unknown.status_code == 400
    assert "Wrong name or password." in wrong.text and "Wrong name or password." in unknown.text
    assert wrong.text.replace("quinn7", "NAME") == unknown.text.replace("nobody9", "NAME").replace(
        unknown.context["csrf"],
        wrong.context["csrf"],  # type: ignore[attr-defined]
    )
    assert SESSION_COOKIE not in api.cookies


def test_the_login_form_needs_its_own_token(api: TestClient) -> None:
    add_user(api, "ida")
    api.get("/login")
    forged = api.post("/login", data={"username": "ida", "password": PASSWORD, "csrf": "forged"})
    assert forged.status_code == 403 and "did not come from this site" in forged.text
    api.cookies.clear()  # a cross-site post: the field is known to the attacker, the cookie is not sent
    page = TestClient(api.app).get("/login")
    stolen = page.context["csrf"]  # type: ignore[attr-defined]
    missing = api.post("/login", data={"username": "ida", "password": PASSWORD, "csrf": stolen})
    assert missing.status_code == 403 and SESSION_COOKIE not in api.cookies


def test_failed_logins_are_limited_per_client_and_per_name(api: TestClient) -> None:
    add_user(api, "max")
    for _ in range(3):  # login_attempts=3 in this app
        assert login(api, "max", "wrong password!", **{"X-Forwarded-For": "10.0.0.1"}).status_code == 400
    limited = login(api, "max", PASSWORD, **{"X-Forwarded-For": "10.0.0.1"})
    assert limited.status_code == 429 and SESSION_COOKIE not in api.cookies
    assert 0 < int(limited.headers["retry-after"]) <= 15 * 60
    assert "Too many failed logins. Please wait 15 minutes" in limited.text
    # the name is held even from another address ...
    assert login(api, "max", PASSWORD, **{"X-Forwarded-For": "10.0.0.2"}).status_code == 429
    # ... and the address is held even for another name
    add_user(api, "zoe")
    assert login(api, "zoe", PASSWORD, **{"X-Forwarded-For": "10.0.0.1"}).status_code == 429
    assert login(api, "zoe", PASSWORD, **{"X-Forwarded-For": "10.0.0.3"}).status_code == 303


def test_a_disabled_user_cannot_use_an_existing_session(api: TestClient) -> None:
    add_user(api, "eva")
    assert login(api, "eva").status_code == 303
    assert api.get("/api/v1/me").status_code == 200
    engine = api.app.state.services.store.engine  # type: ignore[attr-defined]
    with Session(engine) as db:  # as another process would: the flag only, the session row stays
        user = db.exec(select(User).where(User.username == "eva")).one()
        user.disabled = True
        db.add(user)
        db.commit()
    assert api.get("/api/v1/me").status_code == 401
    assert login(api, "eva").status_code == 400


def test_an_expired_session_is_refused(api: TestClient) -> None:
    add_user(api, "ola")
    assert login(api, "ola").status_code == 303
    with Session(api.app.state.services.store.engine) as db:  # type: ignore[attr-defined]
        row = db.exec(select(LoginSession)).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        db.add(row)
        db.commit()
    assert api.get("/api/v1/me").status_code == 401


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/account?tab=1", "/account?tab=1"),
        ("//evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("javascript:alert(1)", "/"),
        ("", "/"),
    ],
)
def test_next_leads_only_to_local_paths(target: str, expected: str) -> None:
    assert safe_next(target) == expected


def test_pages_send_anonymous_visitors_to_login_and_back(api: TestClient) -> None:
    add_user(api, "kim")
    page = api.get("/account?tab=1", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"] == "/login?next=%2Faccount%3Ftab%3D1"
    assert login(api, "kim", next="//evil.example/").headers["location"] == "/"


def test_admin_pages_take_an_admin_session_and_still_the_token(api: TestClient) -> None:
    add_user(api, "mod")
    add_user(api, "boss", role="admin")
    assert api.get("/api/v1/sites", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert login(api, "mod").status_code == 303
    refused = api.get("/api/v1/sites")
    assert refused.status_code == 403 and "'mod' is a moderator" in refused.json()["detail"]
    assert api.get("/admin/sites").status_code == 403

    api.cookies.clear()
    assert login(api, "boss").status_code == 303
    page = api.get("/admin/sites")
    assert page.status_code == 200
    csrf = page.context["csrf"]  # type: ignore[attr-defined]
    assert csrf == session_csrf(api)  # the session's token, not one derived from the admin token
    form = {"name": "Session site", "mode": "fast"}
    assert api.post("/admin/sites", data={**form, "csrf": "forged"}).status_code == 403
    added = api.post("/admin/sites", data={**form, "csrf": csrf}, follow_redirects=False)
    assert added.status_code == 303
    assert "Session site" in [s["name"] for s in api.get("/api/v1/sites").json()]


def test_an_admin_session_opens_the_admin_pages_without_a_token(tmp_path: Path) -> None:
    with client(tmp_path) as api:
        add_user(api, "root", role="admin")
        closed = api.get("/api/v1/sites")
        assert closed.status_code == 403 and "UNERASE_ADMIN_TOKEN" in closed.json()["detail"]
        assert login(api, "root").status_code == 303
        assert api.get("/admin/sites").status_code == 200


def test_require_role_admits_that_role_and_those_above(tmp_path: Path) -> None:
    app = create_app(settings(tmp_path))

    @app.get("/moderation-check")
    async def moderation(user: Annotated[User, Depends(require_role("moderator"))]) -> str:
        return user.username

    @app.get("/api/v1/admin-check")
    async def admin_only(user: Annotated[User, Depends(require_role("admin"))]) -> str:
        return user.username

    with TestClient(app) as api:
        add_user(api, "mod")
        add_user(api, "boss", role="admin")
        assert api.get("/moderation-check", follow_redirects=False).status_code == 303
        assert api.get("/api/v1/admin-check").status_code == 401
        login(api, "mod")
        assert api.get("/moderation-check").json() == "mod"
        assert api.get("/api/v1/admin-check").status_code == 403
        api.cookies.clear()
        login(api, "boss")
        assert api.get("/moderation-check").json() == "boss"
        assert api.get("/api/v1/admin-check").json() == "boss"


def test_an_old_hash_is_upgraded_at_login(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'accounts.db'}")
    weak = Accounts(engine, PasswordHasher(time_cost=1, memory_cost=8 * 1024, parallelism=1))
    before = weak.create("old", PASSWORD, "moderator").password_hash
    assert "m=8192,t=1,p=1" in before
    current = Accounts(engine)
    assert current.authenticate("old", "wrong password here") is None
    assert current.get("old").password_hash == before  # type: ignore[union-attr]
    assert current.authenticate("old", PASSWORD) is not None
    after = current.get("old").password_hash  # type: ignore[union-attr]
    assert after != before and after.startswith("$argon2id$") and "m=65536,t=3,p=4" in after
    assert current.authenticate("old", PASSWORD) is not None
