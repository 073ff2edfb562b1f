"""Moderator and admin accounts: password hashing, server-side sessions, and the dependencies that guard pages.

Passwords are hashed with argon2id. A login creates a session row holding the SHA-256 of a random token; the
browser keeps the token itself in the `unerase_session` cookie (HttpOnly, SameSite=Lax, Secure over HTTPS).
Each session also has its own CSRF token, which every form of a signed-in user must send back
(`check_csrf`): the cookie alone is sent by the browser automatically, the form token is not.

Routes use `require_user` / `require_role(...)`; `current_user` is for pages that only adapt to who is there.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cached_property
from typing import Literal
from urllib.parse import quote

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from fastapi import Request
from sqlalchemy import delete
from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool

from engine.errors import UneraseError
from web.models import LoginSession, User, utcnow

Role = Literal["admin", "moderator"]
ROLES: tuple[Role, ...] = ("admin", "moderator")
SESSION_COOKIE = "unerase_session"
MIN_PASSWORD = 12
MAX_PASSWORD = 1024  # hashing is deliberately slow; an unbounded password would make it a denial of service
USERNAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


class AccountError(UneraseError):
    code = "invalid-account"


class UnknownUser(UneraseError):
    status = 404
    code = "unknown-user"


class UserExists(UneraseError):
    status = 409
    code = "user-exists"


class CsrfRefused(UneraseError):
    status = 403
    code = "csrf"


class Forbidden(UneraseError):
    status = 403
    code = "forbidden"


class LoginRequired(UneraseError):
    """Raised by `require_user`. A dependency cannot return a response, so pages get this as a 303 with a
    Location header (the one error handler keeps headers, and browsers follow it); the API gets 401."""

    code = "login-required"

    def __init__(self, request: Request) -> None:
        if request.url.path.startswith("/api/"):
            super().__init__("this needs a signed-in moderator or admin; log in at /login first")
            self.status = 401
            self.headers: dict[str, str] = {}
        else:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            super().__init__("this page needs you to log in")
            self.status = 303
            self.headers = {"Location": "/login?next=" + quote(target, safe="")}


def normalise_username(name: str) -> str:
    username = name.strip().lower()
    if not USERNAME.fullmatch(username):
        raise AccountError(
            f"'{name}' is not a usable user name; use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return username


def check_password_rules(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"a password needs at least {MIN_PASSWORD} characters; this one has {len(password)}")
    if len(password) > MAX_PASSWORD:
        raise AccountError(f"a password may have at most {MAX_PASSWORD} characters; this one has {len(password)}")


def check_role(role: str) -> Role:
    for known in ROLES:
        if role == known:
            return known
    raise AccountError(f"unknown role '{role}'; accepted: {', '.join(ROLES)}")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def as_utc(moment: datetime) -> datetime:
    # SQLite gives datetimes back without their zone; they were written in UTC
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def safe_next(target: str | None) -> str:
    """Only a path on this server: "//host" and "/\\host" are read by browsers as another site."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return "/"
    if any(ord(c) < 32 or c == "\\" for c in target):
        return "/"
    return target


class Accounts:
    """Users and sessions in the database. Blocking (argon2, SQLAlchemy): routes call it in a thread."""

    def __init__(self, engine: Engine, hasher: PasswordHasher | None = None) -> None:
        self.engine = engine
        self.hasher = hasher or PasswordHasher()  # argon2id with the library's current recommended parameters

    @cached_property
    def _dummy_hash(self) -> str:
        # checked against for unknown names, so they cost as much time as a wrong password
        return self.hasher.hash(secrets.token_urlsafe(16))

    def _session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # -- users ------------------------------------------------------------------------------
    def get(self, username: str) -> User | None:
        with self._session() as session:
            return session.exec(select(User).where(User.username == username.strip().lower())).first()

    def all(self) -> list[User]:
        with self._session() as session:
            return list(session.exec(select(User).order_by(col(User.username))))

    def create(self, username: str, password: str, role: str) -> User:
        name, checked_role = normalise_username(username), check_role(role)
        check_password_rules(password)
        if self.get(name) is not None:
            raise UserExists(f"a user named '{name}' already exists; `unerase user passwd {name}` changes the password")
        user = User(username=name, password_hash=self.hasher.hash(password), role=checked_role)
        with self._session() as session:
            session.add(user)
            session.commit()
        return user

    def _change(self, username: str, change: Callable[[User], None]) -> User:
        with self._session() as session:
            user = session.exec(select(User).where(User.username == username.strip().lower())).first()
            if user is None:
                raise UnknownUser(f"no user is named '{username}'; `unerase user list` shows them")
            change(user)
            session.add(user)
            session.commit()
        return user

    def set_password(self, username: str, password: str) -> User:
        check_password_rules(password)
        password_hash = self.hasher.hash(password)

        def change(user: User) -> None:
            user.password_hash = password_hash

        user = self._change(username, change)
        self.close_sessions(user.username)  # whoever knew the old password is signed out
        return user

    def disable(self, username: str) -> User:
        def change(user: User) -> None:
            user.disabled = True

        user = self._change(username, change)
        self.close_sessions(user.username)
        return user

    def enable(self, username: str) -> User:
        """Lets a disabled account log in again. Sessions ended by `disable` stay ended: the user logs in anew."""

        def change(user: User) -> None:
            user.disabled = False

        return self._change(username, change)

    def authenticate(self, username: str, password: str) -> User | None:
        """The user if the name and password match an enabled account; None for every kind of failure."""
        user = self.get(username) if USERNAME.fullmatch(username.strip().lower()) else None
        stored = user.password_hash if user is not None else self._dummy_hash
        try:
            self.hasher.verify(stored, password)
        except (VerificationError, InvalidHashError):
            return None
        if user is None or user.disabled:
            return None
        if self.hasher.check_needs_rehash(user.password_hash):
            new_hash = self.hasher.hash(password)

            def change(row: User) -> None:
                row.password_hash = new_hash

            user = self._change(user.username, change)
        return user

    # -- sessions -----------------------------------------------------------------------------
    def open_session(self, user: User, hours: float) -> tuple[str, LoginSession]:
        """(the raw token for the cookie, the stored session). Expired sessions are swept on the way."""
        token = secrets.token_urlsafe(32)
        now = utcnow()
        row = LoginSession(
            token_hash=token_hash(token),
            username=user.username,
            csrf_token=secrets.token_urlsafe(32),
            created_at=now,
            expires_at=now + timedelta(hours=hours),
        )
        with self._session() as session:
            session.exec(delete(LoginSession).where(col(LoginSession.expires_at) < now))
            session.add(row)
            session.commit()
        return token, row

    def find_session(self, token: str) -> SignedIn | None:
        """The signed-in user for a cookie token, or None if the session is unknown, expired or its user disabled."""
        with self._session() as session:
            row = session.get(LoginSession, token_hash(token))
            if row is None:
                return None
            user = session.exec(select(User).where(User.username == row.username)).first()
            if user is None or user.disabled or as_utc(row.expires_at) <= utcnow():
                session.delete(row)
                session.commit()
                return None
        return SignedIn(user=user, csrf_token=row.csrf_token, expires_at=as_utc(row.expires_at))

    def close_session(self, token: str) -> None:
        with self._session() as session:
            session.exec(delete(LoginSession).where(col(LoginSession.token_hash) == token_hash(token)))
            session.commit()

    def close_sessions(self, username: str) -> None:
        with self._session() as session:
            session.exec(delete(LoginSession).where(col(LoginSession.username) == username))
            session.commit()


@dataclass(frozen=True)
class SignedIn:
    """Who is behind a request's session cookie, and the token that session's forms must carry."""

    user: User
    csrf_token: str
    expires_at: datetime

    @property
    def is_admin(self) -> bool:
        return self.user.role == "admin"


# -- request helpers and dependencies -----------------------------------------------------------
def accounts(request: Request) -> Accounts:
    """One `Accounts` per app, made on first use, so the dummy hash for unknown names is computed once."""
    state = request.app.state
    found: Accounts | None = getattr(state, "accounts", None)
    if found is None:
        found = state.accounts = Accounts(state.services.store.engine)
    return found


async def current_session(request: Request) -> SignedIn | None:
    """Looked up once per request (several dependencies ask)."""
    if "signed_in" in request.scope.get("state", {}):
        cached: SignedIn | None = request.state.signed_in
        return cached
    token = request.cookies.get(SESSION_COOKIE)
    signed_in = await run_in_threadpool(accounts(request).find_session, token) if token else None
    request.state.signed_in = signed_in
    return signed_in


async def current_user(request: Request) -> User | None:
    signed_in = await current_session(request)
    return signed_in.user if signed_in else None


async def require_user(request: Request) -> User:
    user = await current_user(request)
    if user is None:
        raise LoginRequired(request)
    return user


def require_role(role: Role) -> Callable[[Request], Awaitable[User]]:
    """A dependency that admits `role` and every role above it (an admin may do what a moderator does)."""
    check_role(role)
    admitted = ROLES[: ROLES.index(role) + 1]

    async def dependency(request: Request) -> User:
        user = await require_user(request)
        if user.role not in admitted:
            raise Forbidden(f"this needs the {role} role; '{user.username}' is a {user.role}")
        return user

    return dependency


async def check_csrf(request: Request, form_token: str | None) -> None:
    """Refuses a signed-in user's form unless it carries that session's CSRF token."""
    signed_in = await current_session(request)
    expected = signed_in.csrf_token if signed_in else ""
    if not expected or not form_token or not hmac.compare_digest(form_token.encode(), expected.encode()):
        raise CsrfRefused("the form's security token is missing or wrong; reload the page and send the form again")
