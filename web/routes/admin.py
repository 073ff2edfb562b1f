"""Registering sites for the widget (web/sites.py), their deferral (web/deferral.py), and reading readers'
feedback: admin API and pages.

Open to a signed-in admin account or the admin token (web/admin.py says how, and how its forms are protected).
`/admin/token` asks for the token with HTTP Basic and then goes on. After each save the page says what was saved
(a `saved` query value, so it works without JavaScript too).
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Form, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from engine.deferral import DeferralError, Values
from engine.errors import UneraseError
from web import auth, deferral
from web.admin import TOKEN_PAGE, Admin, check_csrf, form_token, who
from web.bodies import JsonBody
from web.deps import ServicesDep, TemplatesDep
from web.errors import PROBLEM_RESPONSES, NotFound
from web.models import Site, iso
from web.services import Services
from web.sites import new_key, normalise_origin, parse_list, site_to_dict

router = APIRouter(tags=["admin"])
log = logging.getLogger("unerase.admin")


class SiteFields(JsonBody):
    name: str | None = Field(default=None, max_length=200)
    allowed_origins: list[str] | None = Field(default=None, description='e.g. ["https://forum.example"]')
    languages: list[str] | None = Field(default=None, description="Empty: every loaded language.")
    mode: Literal["fast", "thorough"] | None = None
    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    store: bool | None = Field(default=None, description="False: texts and results stay in memory only.")
    show_checked: bool | None = None
    show_undecided: Literal["nothing", "about", "review"] | None = Field(
        default=None,
        description='What readers see on a post nothing could decide: nothing, "About these words" (about) or '
        '"Under review" (review). Moderators always see it in the queue.',
    )
    rate_limit_per_minute: int | None = Field(default=None, ge=0)


def apply(site: Site, fields: SiteFields, services: Services) -> Site:
    values = fields.model_dump(exclude_none=True)
    if "allowed_origins" in values:
        values["allowed_origins"] = json.dumps([normalise_origin(o) for o in values["allowed_origins"]])
    if "languages" in values:
        unknown = [code for code in values["languages"] if code not in services.detector.languages]
        if unknown:
            raise UneraseError(
                f"language(s) {', '.join(unknown)} not loaded; loaded: {', '.join(services.detector.languages)}"
            )
        values["languages"] = json.dumps(values["languages"])
    for name, value in values.items():
        setattr(site, name, value)
    return site


async def load_site(services: Services, key: str) -> Site:
    site = await run_in_threadpool(services.sites.get, key)
    if site is None:
        raise NotFound(f"no site has the key '{key}'")
    return site


# -- API ---------------------------------------------------------------------------------------
@router.get("/api/v1/sites", dependencies=[Admin], responses=PROBLEM_RESPONSES)
async def list_sites(services: ServicesDep) -> list[dict[str, Any]]:
    return [site_to_dict(site) for site in await run_in_threadpool(services.sites.all)]


@router.post("/api/v1/sites", status_code=201, dependencies=[Admin], responses=PROBLEM_RESPONSES)
async def add_site(fields: SiteFields, services: ServicesDep) -> dict[str, Any]:
    if not fields.name:
        raise UneraseError("a site needs a name")
    site = apply(Site(key=new_key(), name=fields.name), fields, services)
    return site_to_dict(await run_in_threadpool(services.sites.save, site))


@router.patch("/api/v1/sites/{key}", dependencies=[Admin], responses=PROBLEM_RESPONSES)
async def update_site(key: str, fields: SiteFields, services: ServicesDep) -> dict[str, Any]:
    site = apply(await load_site(services, key), fields, services)
    return site_to_dict(await run_in_threadpool(services.sites.save, site))


@router.get("/api/v1/sites/{key}/feedback", dependencies=[Admin], responses=PROBLEM_RESPONSES)
async def site_feedback(key: str, services: ServicesDep) -> JSONResponse:
    await load_site(services, key)
    items = await run_in_threadpool(services.sites.feedback, key)
    return JSONResponse(
        [
            {
                "id": f.id,
                "analysis_id": f.analysis_id,
                "post_id": f.post_id,
                "helpful": f.helpful,
                "comment": f.comment,
                "created_at": iso(f.created_at),
            }
            for f in items
        ]
    )


# -- page --------------------------------------------------------------------------------------
@router.get("/admin/sites", response_class=HTMLResponse, dependencies=[Admin], include_in_schema=False)
async def sites_page(
    request: Request, services: ServicesDep, templates: TemplatesDep, added: str = "", updated: str = ""
) -> Response:
    sites = [site_to_dict(site) for site in await run_in_threadpool(services.sites.all)]
    by_key = {site["key"]: site for site in sites}
    context = {
        "sites": sites,
        "csrf": await form_token(request, services),
        "languages": services.detector.languages,
        # the confirmation after a save names the site only when it exists (the keys come from the URL)
        "added": by_key.get(added),
        "updated": by_key.get(updated),
        "widget_url": f"{request.base_url}widget.js",
    }
    return templates.TemplateResponse(request, "admin_sites.html", context)


@router.post("/admin/sites", dependencies=[Admin], include_in_schema=False)
async def sites_form(
    request: Request,
    services: ServicesDep,
    csrf: Annotated[str, Form()],
    name: Annotated[str, Form(max_length=200)],
    origins: Annotated[str, Form()] = "",
    languages: Annotated[str, Form()] = "",
    mode: Annotated[Literal["fast", "thorough"], Form()] = "fast",
    threshold: Annotated[float, Form(ge=0.0, le=1.0)] = 0.5,
    store: Annotated[bool, Form()] = False,
    show_checked: Annotated[bool, Form()] = False,
    show_undecided: Annotated[Literal["nothing", "about", "review"], Form()] = "nothing",
    rate_limit_per_minute: Annotated[int, Form(ge=0)] = 120,
    key: Annotated[str, Form()] = "",
) -> Response:
    """Adds a site, or updates the one named by `key`."""
    await check_csrf(request, services, csrf)
    fields = SiteFields(
        name=name,
        allowed_origins=parse_list(origins.split()),
        languages=parse_list([languages]),
        mode=mode,
        threshold=threshold,
        store=store,
        show_checked=show_checked,
        show_undecided=show_undecided,
        rate_limit_per_minute=rate_limit_per_minute,
    )
    site = await load_site(services, key) if key else Site(key=new_key(), name=name)
    await run_in_threadpool(services.sites.save, apply(site, fields, services))
    saved = "updated" if key else "added"
    return RedirectResponse(f"/admin/sites?{saved}={site.key}#site-{site.key}", status_code=303)


@router.get(TOKEN_PAGE, dependencies=[Admin], include_in_schema=False)
async def token_login(next: str = "/admin/sites") -> Response:
    """Reached with the admin token as HTTP Basic password (the browser asks for it); goes on to `next`."""
    return RedirectResponse(auth.safe_next(next), status_code=303)


# -- one site's deferral page ------------------------------------------------------------------------
@router.get("/admin/sites/{key}", response_class=HTMLResponse, dependencies=[Admin], include_in_schema=False)
async def site_page(
    key: str, request: Request, services: ServicesDep, templates: TemplatesDep, saved: str = ""
) -> Response:
    """The site's values, V(τ) with the τ it proposes, and the calibration of its confidences."""
    site = await load_site(services, key)
    report = await run_in_threadpool(deferral.site_report, services.store.engine, site)
    context = {
        "site": site_to_dict(site),
        "values": {field.name: getattr(site, field.name) for field in deferral.VALUE_FIELDS},
        "value_fields": deferral.VALUE_FIELDS,
        "report": report,
        "current_calibration": deferral.describe(report.current_calibration),
        "fitted_calibration": deferral.describe(report.calibration),
        "value_chart": deferral.value_chart(report),
        "calibration_chart": deferral.calibration_chart(report),
        "csrf": await form_token(request, services),
        "languages": services.detector.languages,
        "saved": SAVED_MESSAGES.get(saved),
    }
    return templates.TemplateResponse(request, "admin_site.html", context)


SAVED_MESSAGES = {
    "values": "Saved: the values of the outcomes. The proposed threshold below is computed from them.",
    "deferral": "Saved: this site now uses the chosen threshold τ and calibration.",
}


@router.post("/admin/sites/{key}/values", dependencies=[Admin], include_in_schema=False)
async def site_values_form(
    key: str,
    request: Request,
    services: ServicesDep,
    csrf: Annotated[str, Form()],
    value_tp: Annotated[float, Form()],
    value_tn: Annotated[float, Form()],
    value_fp: Annotated[float, Form()],
    value_fn: Annotated[float, Form()],
    value_r: Annotated[float, Form()],
) -> Response:
    await check_csrf(request, services, csrf)
    site = await load_site(services, key)
    values = Values(tp=value_tp, tn=value_tn, fp=value_fp, fn=value_fn, r=value_r)  # refuses bad ones
    await run_in_threadpool(deferral.save_values, services.sites, site, values)
    log.info("site %s: values set to %s by %s", key, values, await who(request))
    return RedirectResponse(f"/admin/sites/{key}?saved=values", status_code=303)


@router.post("/admin/sites/{key}/deferral", dependencies=[Admin], include_in_schema=False)
async def site_deferral_form(
    key: str, request: Request, services: ServicesDep, csrf: Annotated[str, Form()]
) -> Response:
    """Applies the τ and calibration the page proposes, computed afresh so that both come from the same data."""
    await check_csrf(request, services, csrf)
    site = await load_site(services, key)
    report = await run_in_threadpool(deferral.site_report, services.store.engine, site)
    if report.chosen is None:
        raise DeferralError(f"no threshold can be chosen for this site yet: {report.refusal}")
    before = (site.threshold, site.calibration)
    await run_in_threadpool(deferral.apply, services.sites, site, report.chosen[0], report.calibration)
    log.info(
        "site %s: τ %.4f and calibration %r replaced τ %.4f and %r (from %d reviewed decisions), by %s",
        key,
        site.threshold,
        site.calibration,
        *before,
        report.reviewed,
        await who(request),
    )
    return RedirectResponse(f"/admin/sites/{key}?saved=deferral", status_code=303)
