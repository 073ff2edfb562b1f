"""The application factory: `create_app(settings)`; nothing is loaded at import time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from engine.analysis import BackendRouter
from engine.paths import PROJECT_ROOT
from web import errors, evaluation_report, i18n, language_names, review_words
from web.auth import current_session
from web.bodylimit import BodyLimit, upload_routes
from web.private import PrivateResponses
from web.render import install_filters
from web.routes import account, admin, analyses, batches, demo, health, quality, review, widget
from web.routes import annotations as annotation_routes
from web.routes import evaluations as evaluation_routes
from web.services import Services
from web.settings import Settings, get_settings
from web.worker import Background, job_loops

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=()",
}


def create_app(settings: Settings | None = None, *, backends: BackendRouter | None = None) -> FastAPI:
    """`backends` replaces the configured language models (tests pass a scripted one)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        services = await run_in_threadpool(Services.build, settings, backends)
        app.state.services = services
        # routes set it when they queue a batch job; without run_jobs nobody here waits on it (workers poll)
        app.state.batch_wake = asyncio.Event()
        background = Background(job_loops(services, app.state.batch_wake) if settings.run_jobs else [])
        app.state.background = background
        background.start()
        # leases of the analyses run here, and (run_jobs) the analyses nobody runs any more
        await services.runs.begin()
        # the change feed and housekeeping of state shared with other processes (web/shared.py)
        shared = [asyncio.create_task(part) for part in services.background()]
        try:
            yield
        finally:
            await background.stop()
            for running in shared:
                running.cancel()
            await asyncio.gather(*shared, return_exceptions=True)
            await services.runs.shutdown()
            await services.aclose()

    app = FastAPI(
        title="unerase",
        version="0.1.0",
        summary="Detects hateful, derogatory and contentious language and explains it in context.",
        lifespan=lifespan,
        # every page's nav says who is signed in; costs a lookup only for requests that carry a session cookie
        dependencies=[Depends(current_session)],
    )
    app.state.settings = settings

    def status_line(request: Request) -> dict[str, Any]:
        services: Services | None = getattr(request.app.state, "services", None)
        return {"status_line": services.status_line() if services else None}

    app.state.templates = Jinja2Templates(directory=PROJECT_ROOT / "templates", context_processors=[status_line])
    install_filters(app.state.templates.env)
    i18n.install(app.state.templates.env)
    review_words.install(app.state.templates.env)
    evaluation_report.install(app.state.templates.env)
    language_names.install(app.state.templates.env)
    app.mount("/static", StaticFiles(directory=PROJECT_ROOT / "static"), name="static")
    # quality before review: /review/{analysis_id} would take /review/quality for an item
    for module in (health, demo, analyses, annotation_routes, batches, widget, admin, account, quality, review):
        app.include_router(module.router)
    app.include_router(evaluation_routes.router)
    errors.install(app)

    app.add_middleware(PrivateResponses)
    # bodies are counted as they arrive and refused past the limit, before anything parses them
    uploads = upload_routes(app.routes)
    limits = {"limit": settings.max_body_bytes, "upload_limit": settings.max_upload_bytes}
    app.add_middleware(BodyLimit, **limits, uploads=uploads)
    # the reader's language, for every page and the fragments streamed into it (docs/i18n.md)
    app.add_middleware(i18n.Language)
    app.add_middleware(SecurityHeaders)
    return app


class SecurityHeaders:
    """Adds the headers above to every response that does not set its own (a plain ASGI middleware:
    Starlette's BaseHTTPMiddleware costs more per request than the vocabulary stage)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in self.headers if k not in present]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)
