"""Who may use the admin pages and API, and the security token their forms carry.

Open to a signed-in admin account (session cookie; its forms carry the session's CSRF token), and,
when `admin_token` is set, to that token: the API takes `Authorization: Bearer TOKEN`; the page takes
HTTP Basic (any user name, the token as password), and its forms then carry a CSRF token derived from
the admin token, so another site cannot post them with the browser's stored credentials.

A browser that comes to an admin page with neither a session nor credentials is sent to `/login?next=…`,
as the review pages do; `/admin/token` (web/routes/admin.py) asks for the token with HTTP Basic instead.
"""

from __future__ import annotations

import base64
import hashlib
import hmac

from fastapi import Depends, Request

from web import auth
from web.deps import ServicesDep
from web.errors import Closed, Unauthorized
from web.services import Services

CSRF_HEADER = "X-CSRF-Token"
TOKEN_PAGE = "/admin/token"


async def require_admin(request: Request, services: ServicesDep) -> None:
    signed_in = await auth.current_session(request)
    header = request.headers.get("authorization", "")
    path = request.url.path
    if signed_in is None and not header and not path.startswith("/api/") and path != TOKEN_PAGE:
        raise auth.LoginRequired(request)  # a 303 to /login?next=this page
    if signed_in is not None and signed_in.is_admin and not header.startswith("Bearer "):
        await check_api_csrf(request, services)
        return
    if signed_in is not None and not header:
        raise auth.Forbidden(f"this needs an admin account; '{signed_in.user.username}' is a {signed_in.user.role}")
    token = services.settings.admin_token
    if not token:
        raise Closed(
            "the admin pages and API are closed; log in with an admin account "
            "(unerase user create NAME --role admin) or set UNERASE_ADMIN_TOKEN to open them"
        )
    given = ""
    if header.startswith("Bearer "):
        given = header[7:]
    elif header.startswith("Basic "):
        try:
            given = base64.b64decode(header[6:]).decode("utf-8").partition(":")[2]
        except ValueError:
            given = ""
    if not given or not hmac.compare_digest(given.encode(), token.encode()):
        raise Unauthorized("this needs the admin token (HTTP Basic password, or Authorization: Bearer TOKEN)")
    if not header.startswith("Bearer "):
        await check_api_csrf(request, services)


async def check_api_csrf(request: Request, services: Services) -> None:
    """A change through the admin API authenticated by what a browser sends on its own, the session cookie or
    remembered HTTP Basic credentials, must also carry the form token in X-CSRF-Token: another site can make the
    browser send the credentials, but it cannot read the token. A bearer token is never sent on its own.
    The pages' forms carry the same token in a field instead (check_csrf below)."""
    if not request.url.path.startswith("/api/") or request.method in ("GET", "HEAD", "OPTIONS"):
        return
    signed_in = await auth.current_session(request)
    where = (
        "csrf_token of GET /api/v1/me"
        if signed_in is not None and signed_in.is_admin
        else "the csrf field of the forms on /admin/sites"
    )
    given = request.headers.get(CSRF_HEADER, "")
    if not given:
        raise auth.CsrfRefused(
            f"a change through the admin API with a login session or HTTP Basic needs the {CSRF_HEADER} header "
            f"with the security token ({where}); scripts can send Authorization: Bearer with the admin token instead"
        )
    if not hmac.compare_digest(given.encode(), (await form_token(request, services)).encode()):
        raise auth.CsrfRefused(f"the {CSRF_HEADER} header does not hold the security token; read it again ({where})")


Admin = Depends(require_admin)


def csrf_token(services: Services) -> str:
    secret = (services.settings.admin_token or "").encode()
    return hmac.new(secret, b"unerase admin form", hashlib.sha256).hexdigest()


async def form_token(request: Request, services: Services) -> str:
    """A signed-in admin's forms carry the session's token; token users' forms the one derived from the token."""
    signed_in = await auth.current_session(request)
    return signed_in.csrf_token if signed_in is not None and signed_in.is_admin else csrf_token(services)


async def check_csrf(request: Request, services: Services, given: str) -> None:
    if not hmac.compare_digest(given.encode(), (await form_token(request, services)).encode()):
        raise Closed("the form's security token is missing or wrong; reload the admin page and try again")


async def who(request: Request) -> str:
    """For the log: the signed-in admin's name, or the admin token."""
    signed_in = await auth.current_session(request)
    return signed_in.user.username if signed_in is not None else "the admin token"
