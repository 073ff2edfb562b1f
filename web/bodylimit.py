"""Request bodies are capped by size before anything reads them whole (settings `max_body_bytes`).

A body whose Content-Length announces more than the limit is refused before one byte of it is read; a body without
one (chunked) is counted as it arrives and refused as soon as it passes the limit. Either way the answer is a
413 problem (or the error page) naming the limit. Routes that take a file upload (batch jobs) have the larger
limit of `max_upload_bytes`, with room for the form's other fields.

Starlette's own limiter answers in plain text and replaces the route's answer when Content-Length is too large;
this one answers like every other error of the app (web.errors).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fastapi import params
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.routing import BaseRoute, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.errors import UneraseError
from web import errors

UPLOAD_FORM_ALLOWANCE = 64 * 1024  # bytes of multipart boundaries and small fields beside an uploaded file


class BodyTooLarge(UneraseError, HTTPException):
    """Also an HTTPException, so that FastAPI's body reading lets it through (it turns any other exception raised
    while reading into a 400); an UneraseError first, so that it is answered like the refusal below."""

    status = 413
    code = "content-too-large"

    def __init__(self, detail: str) -> None:
        HTTPException.__init__(self, self.status, detail)
        self.message = detail


def upload_routes(routes: Iterable[BaseRoute], prefix: str = "") -> list[re.Pattern[str]]:
    """The path patterns of the routes with a File parameter: they get the upload limit."""
    found = []
    for route in routes:
        included = getattr(route, "original_router", None)  # FastAPI keeps included routers whole
        if included is not None:
            found += upload_routes(included.routes, prefix + route.include_context.prefix)  # type: ignore[attr-defined]
        elif isinstance(route, APIRoute) and any(
            isinstance(f.field_info, params.File) for f in route.dependant.body_params
        ):
            found.append(compile_path(prefix + route.path)[0])
    return found


class BodyLimit:
    """`limit` for every body, `upload_limit` (the largest file) plus UPLOAD_FORM_ALLOWANCE on `uploads`."""

    def __init__(self, app: ASGIApp, limit: int, upload_limit: int, uploads: list[re.Pattern[str]]) -> None:
        self.app = app
        self.limit = (limit, f"the request body is larger than {limit:,} bytes, the most accepted here")
        # the same words as the upload route's own check, which a file just over the limit meets first
        self.upload_limit = (
            upload_limit + UPLOAD_FORM_ALLOWANCE,
            f"the upload is larger than {upload_limit:,} bytes, the most accepted; split the file",
        )
        self.uploads = uploads

    def limit_for(self, path: str) -> tuple[int, str]:
        return self.upload_limit if any(pattern.match(path) for pattern in self.uploads) else self.limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit, detail = self.limit_for(scope["path"])
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > limit:
            await self.refuse(scope, receive, send, detail)
            return
        received = 0
        started = False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise BodyTooLarge(detail)
            return message

        async def noting_start(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, noting_start)
        except BodyTooLarge:
            # only a route that does not read its body can let this through (the error handler takes it otherwise);
            # once its answer has begun, the connection simply ends
            if not started:
                await self.refuse(scope, receive, send, detail)

    @staticmethod
    async def refuse(scope: Scope, receive: Receive, send: Send, detail: str) -> None:
        request = Request(scope, receive)
        response = errors.problem(request, BodyTooLarge.status, BodyTooLarge.code, detail, {"Connection": "close"})
        await response(scope, receive, send)
