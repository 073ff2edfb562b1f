"""The application factory: `create_app(settings)`; nothing is loaded at import time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.concurrency import run_in_threadpool

from engine.detector import Detector
from engine.paths import PROJECT_ROOT
from engine.vocabulary.loader import load_vocabularies
from web.routes import demo
from web.settings import Settings, get_settings

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        def build() -> Detector:
            detector = Detector(load_vocabularies(settings.vocabularies), cache_dir=settings.cache_dir)
            for language in detector.languages:
                detector.index(language)  # compile every language once, before the first request
            return detector

        app.state.detector = await run_in_threadpool(build)
        yield

    app = FastAPI(title="unerase", version="0.1.0", lifespan=lifespan)
    app.state.settings = settings
    app.state.templates = Jinja2Templates(directory=PROJECT_ROOT / "templates")
    app.mount("/static", StaticFiles(directory=PROJECT_ROOT / "static"), name="static")
    app.include_router(demo.router)

    @app.middleware("http")
    async def security_headers(request, call_next):  # type: ignore[no-untyped-def]
        response = await call_next(request)
        response.headers.update(SECURITY_HEADERS)
        return response

    return app
