"""The widget: its script, and the calls it makes with a site key (CORS limited to the site's origins)."""

from __future__ import annotations

import gzip
import hashlib
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field
from starlette.concurrency import run_in_threadpool

from engine.errors import InputTooLarge, InvalidText
from engine.paths import PROJECT_ROOT
from web.bodies import JsonBody
from web.deps import ServicesDep
from web.errors import PROBLEM_RESPONSES, NotFound
from web.models import Feedback, Site
from web.ratelimit import client_address
from web.services import Services
from web.shown import as_site_shows
from web.sites import UnknownSite
from web.sse import json_message, last_event_id, respond
from web.widget import MAX_POSTS, Post

router = APIRouter(tags=["widget"])
SCRIPT = PROJECT_ROOT / "widget" / "unerase-widget.js"


class WidgetPost(JsonBody):
    id: str = Field(max_length=200)
    text: str
    lang: str | None = Field(default=None, description="The post's own language, when the page marks it.")


class CheckRequest(JsonBody):
    lang: str | None = Field(default=None, description="The page's language (html lang), if any.")
    posts: list[WidgetPost] = Field(description=f"1 to {MAX_POSTS} posts.")


class FeedbackRequest(JsonBody):
    analysis_id: str = Field(max_length=32)
    post_id: str = Field(default="", max_length=200)
    helpful: bool
    comment: str | None = Field(default=None, max_length=2_000)
    reader: str | None = Field(
        default=None,
        max_length=200,
        description="A random token the widget keeps for its reader (localStorage): one vote per reader and "
        "analysis is counted. Opaque to the server, which keeps only a keyed hash of it; without it (or empty) "
        "the client's address stands for the reader.",
    )


def own_origin(request: Request) -> str:
    return f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"


async def known_site(site_key: str, services: Services) -> Site:
    known, site = services.sites.cached(site_key)
    if not known:
        site = await run_in_threadpool(services.sites.get, site_key)
    if site is None:
        raise UnknownSite(f"no site has the key '{site_key}'; register one with `unerase site add`")
    return site


async def allowed_site(site_key: str, request: Request, services: ServicesDep) -> Site:
    """The site named by the key, if the request does not come from another origin; counted against its limit.
    Reads of an analysis need no Origin (a browser sends none to its own server's pages)."""
    site = await known_site(site_key, services)
    services.sites.check_origin(site, request.headers.get("origin"), own_origin(request))
    await services.sites.limit(site, client_address(request, services.settings.trust_forwarded_for))
    return site


async def site_for_page(site_key: str, request: Request, services: ServicesDep) -> Site:
    """The site named by the key, if the request comes from one of its pages (an allowed Origin is required:
    checks and feedback spend the site's quota, its model calls and its storage); counted against its limit."""
    site = await known_site(site_key, services)
    services.sites.check_origin(site, request.headers.get("origin"), own_origin(request), required=True)
    await services.sites.limit(site, client_address(request, services.settings.trust_forwarded_for))
    return site


SiteDep = Annotated[Site, Depends(allowed_site)]
PageSiteDep = Annotated[Site, Depends(site_for_page)]


def cors(response: Response, request: Request) -> Response:
    origin = request.headers.get("origin")
    if origin:
        response.headers["Access-Control-Allow-Origin"] = origin
        response.headers["Vary"] = "Origin"
    return response


@router.options("/api/v1/widget/{site_key}/{rest:path}", include_in_schema=False)
async def preflight(site_key: str, request: Request, services: ServicesDep) -> Response:
    """Answered for the site's allowed origins (and this server's) only: any other origin, `null` included,
    gets a 403 with no CORS headers, so its browser never sends the request. The widget on such a page learns
    the reason from GET …/site, which needs no preflight and whose refusal any page can read."""
    site = await known_site(site_key, services)
    services.sites.check_origin(site, request.headers.get("origin"), own_origin(request), required=True)
    response = Response(status_code=204)
    response.headers.update(
        {
            "Access-Control-Allow-Methods": "GET, POST",
            "Access-Control-Allow-Headers": "Content-Type, Last-Event-ID",
            "Access-Control-Max-Age": "86400",
        }
    )
    return cors(response, request)


@router.get("/api/v1/widget/{site_key}/site", responses=PROBLEM_RESPONSES)
async def site_settings(site: SiteDep, request: Request) -> Response:
    """Whether this page may use the site (403 with the reason if not), and the site's settings for the widget."""
    return cors(JSONResponse({"site": {"show_checked": site.show_checked}}), request)


@router.post("/api/v1/widget/{site_key}/check", responses=PROBLEM_RESPONSES)
async def check(body: CheckRequest, site: PageSiteDep, request: Request, services: ServicesDep) -> Response:
    """Labels for up to 100 posts in one request (flagged, needs_review, not_flagged, or pending while running)."""
    if not 1 <= len(body.posts) <= MAX_POSTS:
        raise InputTooLarge(f"{len(body.posts)} posts were sent; between 1 and {MAX_POSTS} are accepted per request")
    posts = []
    for number, post in enumerate(body.posts):
        if len(post.text) > services.settings.max_text_chars:
            raise InputTooLarge(f"posts[{number}] has {len(post.text):,} characters; "
                                f"at most {services.settings.max_text_chars:,} are accepted")  # fmt: skip
        if post.text.strip():
            posts.append(Post(post.id, post.text, post.lang))
    if not posts:
        raise InvalidText("every post is empty; send the text of at least one post")
    results = await services.widget.check(site, posts, body.lang)
    payload = {"site": {"show_checked": site.show_checked}, "results": results}
    return cors(JSONResponse(payload), request)


@router.get("/api/v1/widget/{site_key}/analyses/{analysis_id}", responses=PROBLEM_RESPONSES)
async def analysis(analysis_id: str, site: SiteDep, request: Request, services: ServicesDep) -> Response:
    body = await services.widget.document(analysis_id, site)
    if body is None:
        raise NotFound(f"no analysis has the id '{analysis_id}'")
    return cors(Response(body, media_type="application/json"), request)


@router.get("/api/v1/widget/{site_key}/analyses/{analysis_id}/events", responses=PROBLEM_RESPONSES)
async def events(analysis_id: str, site: SiteDep, request: Request, services: ServicesDep) -> Response:
    if not await run_in_threadpool(services.widget.owns, site, analysis_id):
        raise NotFound(f"no analysis has the id '{analysis_id}'")
    found = await services.runs.lookup(analysis_id)
    if found is None:
        raise NotFound(f"no analysis has the id '{analysis_id}'")
    stream = services.runs.events_of(found.record, after=last_event_id(request))
    return cors(respond(stream, lambda n, e: [json_message(n, as_site_shows(site, e))]), request)


@router.post("/api/v1/widget/{site_key}/feedback", status_code=201, responses=PROBLEM_RESPONSES)
async def feedback(body: FeedbackRequest, site: PageSiteDep, request: Request, services: ServicesDep) -> Response:
    """A reader's "Helpful" / "This is wrong", stored for moderators: one vote per reader and analysis (201 for a
    first vote, 200 for a repeat, which replaces the reader's earlier vote)."""
    if not await run_in_threadpool(services.widget.owns, site, body.analysis_id):
        raise NotFound(f"no analysis has the id '{body.analysis_id}'")
    comment = (body.comment or "").strip() or None
    address = client_address(request, services.settings.trust_forwarded_for)
    reader = await run_in_threadpool(services.sites.reader, site, body.analysis_id, body.reader, address)
    stored = Feedback(
        site_key=site.key,
        analysis_id=body.analysis_id,
        post_id=body.post_id,
        helpful=body.helpful,
        comment=comment,
        reader=reader,
    )
    stored, new = await run_in_threadpool(services.sites.add_feedback, stored)
    # a repeat vote is answered like the first, with 200: it replaced the reader's vote, and counts once
    return cors(JSONResponse({"id": stored.id}, status_code=201 if new else 200), request)


def compact(source: str) -> str:
    """The script as served: without whole-line `//` comments and indentation, which JavaScript ignores.

    The source keeps its comments for the next engineer; forums load the script on every page, so what is sent is
    what the size budget counts (tests/test_widget_js.py). Only whole lines are dropped, never the end of a line,
    where `//` may be part of a string ("https://"). The one multi-line string, the panel's CSS, has no line
    starting with `//`, and CSS ignores indentation; a test checks that the result still parses and runs.
    """
    return "\n".join(line.lstrip() for line in source.split("\n") if not line.lstrip().startswith("//"))


class Script:
    """widget.js read once, compacted, with its gzip form and ETag, served with long-lived caching."""

    def __init__(self, path: Path) -> None:
        self.body = compact(path.read_text(encoding="utf-8")).encode("utf-8")
        self.gzipped = gzip.compress(self.body, 9)
        self.etag = '"' + hashlib.sha256(self.body).hexdigest()[:20] + '"'


def not_modified(if_none_match: str, etag: str) -> bool:
    """If-None-Match as RFC 9110 reads it: `*`, or a list of tags compared weakly — proxies send `W/"…"` forms
    and caches may send several tags (the comparison starlette's StaticFiles makes too)."""
    tags = [tag.strip() for tag in if_none_match.split(",")]
    return "*" in tags or etag.removeprefix("W/") in {tag.removeprefix("W/") for tag in tags}


def get_script(request: Request) -> Script:
    """Read on the first request for it, once per app."""
    script: Script | None = getattr(request.app.state, "widget_script", None)
    if script is None:
        script = request.app.state.widget_script = Script(SCRIPT)
    return script


@router.get("/widget.js", include_in_schema=False)
def widget_js(
    script: Annotated[Script, Depends(get_script)],
    accept_encoding: Annotated[str, Header()] = "",
    if_none_match: Annotated[str, Header()] = "",
) -> Response:
    headers = {
        "ETag": script.etag,
        "Cache-Control": "public, max-age=3600",
        "Vary": "Accept-Encoding",
        "Cross-Origin-Resource-Policy": "cross-origin",
    }
    if not_modified(if_none_match, script.etag):
        return Response(status_code=304, headers=headers)
    if "gzip" in accept_encoding:
        headers["Content-Encoding"] = "gzip"
        return Response(script.gzipped, media_type="text/javascript; charset=utf-8", headers=headers)
    return Response(script.body, media_type="text/javascript; charset=utf-8", headers=headers)
