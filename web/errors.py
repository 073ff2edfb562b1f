"""Every error, in one place: problem+json for the API, a friendly page for browsers.

Routes raise `UneraseError` subclasses (message = what was wrong and what is accepted); request
validation errors and HTTP errors from Starlette are rewritten in the same shape.
"""

from __future__ import annotations

from typing import Any, ClassVar

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import UneraseError

PROBLEM = "application/problem+json"
TITLES = {
    400: "Bad request",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Content too large",
    415: "Unsupported media type",
    422: "Unprocessable content",
    429: "Too many requests",
    500: "Internal server error",
    503: "Service unavailable",
}
# the problem answers the API's routes declare for OpenAPI (the routers pass it as `responses=`)
PROBLEM_RESPONSES: dict[int | str, dict[str, object]] = {
    status: {"description": description, "content": {PROBLEM: {}}}
    for status, description in (
        (404, "No analysis with this id"),
        (413, "The text is longer than the configured limit"),
        (422, "The request is not valid (message says what is accepted)"),
        (429, "Too many requests from this client; see Retry-After"),
    )
}


class NotFound(UneraseError):
    status = 404
    code = "not-found"


class RateLimited(UneraseError):
    status = 429
    code = "rate-limited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.headers = {"Retry-After": str(retry_after)}


class Unauthorized(UneraseError):
    status = 401
    code = "unauthorized"
    headers: ClassVar[dict[str, str]] = {"WWW-Authenticate": 'Basic realm="unerase admin", charset="UTF-8"'}


class Closed(UneraseError):
    status = 403
    code = "closed"


class UnsupportedMedia(UneraseError):
    status = 415
    code = "unsupported-media-type"


def wants_html(request: Request) -> bool:
    if request.url.path.startswith("/api/"):
        return False
    return "text/html" in request.headers.get("accept", "") or request.headers.get("hx-request") == "true"


def problem(request: Request, status: int, code: str, detail: str, headers: dict[str, str] | None = None) -> Response:
    title = TITLES.get(status, "Error")
    if wants_html(request):
        templates = request.app.state.templates
        context: dict[str, Any] = {"status": status, "title": title, "detail": detail}
        page: Response = templates.TemplateResponse(request, "error.html", context, status_code=status, headers=headers)
        return page
    if request.url.path.startswith("/api/v1/widget/") and request.method != "OPTIONS":
        # the widget on any page must be able to read why it was refused, to say so in the console; a refused
        # preflight carries no CORS header at all (web.routes.widget.preflight)
        headers = {**(headers or {}), "Access-Control-Allow-Origin": "*"}
    body = {"type": f"/problems/{code}", "title": title, "status": status, "detail": detail}
    return JSONResponse(body, status_code=status, media_type=PROBLEM, headers=headers)


def _describe_validation(exc: RequestValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error.get("loc", ()) if p not in ("body", "query", "path", "form"))
        message = error.get("msg", "invalid")
        if error.get("type") == "json_invalid":
            parts.append('the request body is not valid JSON; send a JSON object such as {"text": "..."}')
        elif error.get("type") == "missing":
            parts.append(f"'{where}' is required")
        else:
            parts.append(f"'{where}': {message}" if where else message)
    return "; ".join(parts) or "the request is not valid"


def install(app: FastAPI) -> None:
    @app.exception_handler(UneraseError)
    async def unerase_error(request: Request, exc: UneraseError) -> Response:
        return problem(request, exc.status, exc.code, exc.message, getattr(exc, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return problem(request, 422, "invalid-request", _describe_validation(exc))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        detail = str(exc.detail)
        if exc.status_code == 404 and detail == "Not Found":
            detail = f"there is nothing at {request.url.path}; the API is described at /docs"
        elif exc.status_code == 405:
            detail = f"{request.method} is not accepted at {request.url.path}"
        return problem(request, exc.status_code, f"http-{exc.status_code}", detail, dict(exc.headers or {}))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        return problem(request, 500, "internal-error", "something went wrong on the server; the error was logged")
