"""Dependency aliases shared by the routers.

They are `async def` although they never wait: FastAPI runs a plain function dependency in the thread pool,
which cost 0.3-1.3 ms of CPU per request on this machine (benchmarks/README.md, "Web").
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import Depends, Request
from fastapi.templating import Jinja2Templates

from web.ratelimit import client_address
from web.services import Services
from web.settings import Settings


async def get_services(request: Request) -> Services:
    services: Services = request.app.state.services
    return services


async def get_app_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def get_templates(request: Request) -> Jinja2Templates:
    templates: Jinja2Templates = request.app.state.templates
    return templates


async def get_batch_wake(request: Request) -> asyncio.Event:
    """Set it when a job is queued: this process's batch worker (web.batch_worker), if it runs one, starts on it at
    once instead of at its next look."""
    wake: asyncio.Event = request.app.state.batch_wake
    return wake


async def rate_limited(request: Request, services: Annotated[Services, Depends(get_services)]) -> None:
    """Counts the request against its client's budget; 429 with Retry-After beyond it."""
    await services.limiter.check(client_address(request, services.settings.trust_forwarded_for))


ServicesDep = Annotated[Services, Depends(get_services)]
SettingsDep = Annotated[Settings, Depends(get_app_settings)]
TemplatesDep = Annotated[Jinja2Templates, Depends(get_templates)]
BatchWake = Annotated[asyncio.Event, Depends(get_batch_wake)]
RateLimit = Depends(rate_limited)
