"""`Cache-Control: no-store` on every response made for someone who proved who they are.

One rule instead of a line per route: a response is private when the request carried a valid session (the
app-wide `current_session` dependency found one) or an Authorization header (the admin token). Such a response
may hold a moderator's queue, an export or an admin's settings; no browser or proxy cache may keep it, whatever
the route set. Everything else (public pages, static files, the widget script) keeps its own caching.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_STORE = (b"cache-control", b"no-store")


class PrivateResponses:
    """A plain ASGI middleware: it reads what `current_session` left in the request state when the response starts."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # the same dict as request.state below, even if a layer copies the scope itself
        state = scope.setdefault("state", {})
        authorised = any(name == b"authorization" for name, _ in scope["headers"])

        async def send_private(message: Message) -> None:
            if message["type"] == "http.response.start" and (authorised or state.get("signed_in") is not None):
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"cache-control"]
                message["headers"] = [*kept, NO_STORE]
            await send(message)

        await self.app(scope, receive, send_private)
