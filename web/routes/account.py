"""Logging in and out, and who is signed in: `/login`, `/logout`, `/account`, `/api/v1/me` (web/auth.py).

CSRF on the login form. Before login there is no session to hold a form token, so the form uses the
double-submit pattern: GET /login puts a random token both in a short-lived cookie (`unerase_login`,
HttpOnly, SameSite=Lax) and in a hidden field, and POST /login accepts the form only when the two are equal.
A page on another site can make the browser send our cookie, but it can neither read it nor set it, so it
cannot write the matching field. After login, forms carry the session's own token (`web.auth.check_csrf`).

Guessing passwords is limited twice: per client IP (one client trying many names) and per user name (many
clients trying one name), by web.logins.LoginGuard. Only failures count, so a moderator who types correctly is
never held up.
"""

from __future__ import annotations

import hmac
import math
import secrets
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from web.auth import (
    SESSION_COOKIE,
    accounts,
    check_csrf,
    current_session,
    require_user,
    safe_next,
)
from web.deps import ServicesDep, TemplatesDep
from web.i18n import plural_key, text
from web.logins import LoginGuard
from web.models import User, iso
from web.ratelimit import client_address

router = APIRouter(tags=["account"])

LOGIN_COOKIE = "unerase_login"
LOGIN_COOKIE_SECONDS = 3600


async def guard(services: ServicesDep) -> LoginGuard:
    """The app's guard (web/logins.py): its counts outlive a request and, on a shared database, this process."""
    return services.login_guard


GuardDep = Annotated[LoginGuard, Depends(guard)]


def is_https(request: Request) -> bool:
    return request.url.scheme == "https"


async def login_page(
    request: Request,
    templates: TemplatesDep,
    *,
    status: int = 200,
    error: str | None = None,
    username: str = "",
    next_path: str = "/",
    headers: dict[str, str] | None = None,
) -> Response:
    """The login form with a fresh double-submit token (also after a failure, so the next try works)."""
    token = secrets.token_urlsafe(32)
    context: dict[str, Any] = {
        "csrf": token,
        "error": error,
        "username": username,
        "next": safe_next(next_path),
        "signed_in": await current_session(request),
    }
    response = templates.TemplateResponse(request, "login.html", context, status_code=status, headers=headers)
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        max_age=LOGIN_COOKIE_SECONDS,
        path="/login",
        secure=is_https(request),
        httponly=True,
        samesite="lax",
    )
    return response


@router.get("/login", response_class=HTMLResponse, include_in_schema=False)
async def login_form(request: Request, templates: TemplatesDep, next: str = "/") -> Response:
    return await login_page(request, templates, next_path=next)


@router.post("/login", include_in_schema=False)
async def login(
    request: Request,
    services: ServicesDep,
    templates: TemplatesDep,
    login_guard: GuardDep,
    username: Annotated[str, Form(max_length=200)],
    password: Annotated[str, Form(max_length=1024)],
    csrf: Annotated[str, Form()] = "",
    next: Annotated[str, Form()] = "/",
) -> Response:
    async def again(status: int, error: str, headers: dict[str, str] | None = None) -> Response:
        return await login_page(
            request, templates, status=status, error=error, username=username, next_path=next, headers=headers
        )

    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not csrf or not expected or not hmac.compare_digest(csrf.encode(), expected.encode()):
        return await again(403, text("login.expired"))
    client, name = client_address(request, services.settings.trust_forwarded_for), username.strip().lower()
    wait = await login_guard.retry_after(client, name)
    if wait:
        minutes = math.ceil(wait / 60)
        message = text(plural_key("login.too_many", minutes), count=minutes)
        return await again(429, message, {"Retry-After": str(wait)})
    user = await run_in_threadpool(accounts(request).authenticate, username, password)
    if user is None:
        await login_guard.fail(client, name)
        return await again(400, text("login.wrong"))
    old = request.cookies.get(SESSION_COOKIE)
    if old:
        # a new login never reuses a session someone may have planted in this browser
        await run_in_threadpool(accounts(request).close_session, old)
    token, _ = await run_in_threadpool(accounts(request).open_session, user, services.settings.session_hours)
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        token,
        max_age=int(services.settings.session_hours * 3600),
        path="/",
        secure=is_https(request),
        httponly=True,
        samesite="lax",
    )
    response.delete_cookie(LOGIN_COOKIE, path="/login")
    return response


@router.post("/logout", include_in_schema=False)
async def logout(request: Request, csrf: Annotated[str, Form()] = "") -> Response:
    token = request.cookies.get(SESSION_COOKIE)
    if token and await current_session(request) is not None:
        await check_csrf(request, csrf)
        await run_in_threadpool(accounts(request).close_session, token)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/", secure=is_https(request), httponly=True, samesite="lax")
    return response


@router.get("/account", response_class=HTMLResponse, include_in_schema=False)
async def account_page(
    request: Request, templates: TemplatesDep, user: Annotated[User, Depends(require_user)]
) -> Response:
    return await login_page(request, templates, username=user.username)


@router.get("/api/v1/me")
async def me(request: Request, user: Annotated[User, Depends(require_user)]) -> dict[str, str]:
    """The signed-in moderator or admin (session cookie); 401 without one. `csrf_token` is what a change through
    the admin API must send in X-CSRF-Token (this answer is readable only by pages of this site)."""
    signed_in = await current_session(request)
    expires = iso(signed_in.expires_at) if signed_in else ""
    csrf = signed_in.csrf_token if signed_in else ""
    return {"username": user.username, "role": user.role, "session_expires_at": expires, "csrf_token": csrf}
