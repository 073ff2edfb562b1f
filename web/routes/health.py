"""Health and readiness for load balancers and process supervisors (docs/deploy.md).

- `GET /healthz`: the process answers HTTP (liveness). It reads nothing, so a slow database never gets a node
  restarted.
- `GET /readyz`: the node can do its work: the database answers a query within two seconds. 503 otherwise,
  with the reason, so a load balancer stops sending readers to a node that would fail them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from sqlalchemy import text
from starlette.concurrency import run_in_threadpool

from web.deps import ServicesDep

router = APIRouter(tags=["health"])

READY_TIMEOUT_SECONDS = 2.0


@router.get("/healthz", include_in_schema=True)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", responses={503: {"description": "Not ready; `reason` says why"}})
async def readyz(services: ServicesDep) -> JSONResponse:
    def ping() -> None:
        with services.store.engine.connect() as connection:
            connection.execute(text("SELECT 1"))

    body: dict[str, Any] = {"node": services.node, "database": services.store.engine.dialect.name}
    try:
        await asyncio.wait_for(run_in_threadpool(ping), READY_TIMEOUT_SECONDS)
    except TimeoutError:
        return JSONResponse({**body, "status": "unavailable", "reason": "the database did not answer in 2 s"}, 503)
    except Exception as exc:  # any failure to reach the database: not ready, and why
        return JSONResponse({**body, "status": "unavailable", "reason": f"the database failed: {exc}"}, 503)
    return JSONResponse({**body, "status": "ready"})
