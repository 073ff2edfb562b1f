"""The moderators' pages: the review queue (`/review`), one item with its actions (`/review/{id}`), and what
was decided (`/review/decided`).

Every page needs a signed-in moderator or admin; every form carries the session's CSRF token. After an
action the moderator lands on the next item of the queue (or back on the list the action came from), with
the same filters, and that page says what was saved and offers to undo it (`done=ID` in its address, so the
message works without JavaScript; review.js turns it into a toast that goes away after a few seconds).
"""

from __future__ import annotations

import json
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from engine.vocabulary.model import CATEGORIES
from web import precedents
from web.auth import check_csrf, current_session, require_role
from web.deps import ServicesDep, TemplatesDep
from web.errors import NotFound
from web.models import User
from web.render import segments
from web.review import (
    DECIDED_LABELS,
    KINDS,
    DecidedFilter,
    QueueFilter,
    Review,
    ReviewError,
    ReviewItem,
    newest_sequence,
)

router = APIRouter(tags=["review"], include_in_schema=False)
Moderator = Annotated[User, Depends(require_role("moderator"))]


def review_of(services: ServicesDep) -> Review:
    return Review(services.store.engine, include_demo=services.settings.review_demo_analyses)


ReviewDep = Annotated[Review, Depends(review_of)]


def filters_of(
    language: str | None = None, site: str | None = None, kind: str | None = None, category: str | None = None
) -> QueueFilter:
    return QueueFilter.parse(language, site, kind, category)


FilterDep = Annotated[QueueFilter, Depends(filters_of)]


def item_url(analysis_id: str | None, filters: QueueFilter, **extra: str) -> str:
    query = urlencode({**filters.query(), **extra})
    path = f"/review/{analysis_id}" if analysis_id else "/review"
    return path + (f"?{query}" if query else "")


SAVED = {
    "confirm": "you confirmed “{label}”",
    "overturn": "you decided “{label}”",
    "explain": "the explanation readers see, with the label “{label}”",
    "note": "your note",
}


async def flash_of(review: Review, user: User, done: str | None, undone: str | None) -> dict[str, object] | None:
    """What the page says after an action: what was saved (and an undo while it is allowed), or what an undo
    restored. Read from the item's audit log, so a reload or a shared address says nothing untrue."""
    wanted = done or undone
    if not wanted:
        return None
    found = await run_in_threadpool(review.item, wanted)
    if found is None:
        return None
    mine = [entry for entry, _ in found.history() if entry.actor == user.username and entry.action != "conflict"]
    if not mine:
        return None
    entry, after = mine[-1], json.loads(mine[-1].after)
    label = str(after.get("label", "")).replace("_", " ")
    excerpt = found.record.text[:60] + ("…" if len(found.record.text) > 60 else "")
    if undone and entry.action == "undo":
        by = f"moderator {after['moderator']}" if after.get("decided_by") == "moderator" else "the automatic analysis"
        return {"kind": "undone", "message": f"Undone: the label is “{label}” again, decided by {by}.",
                "excerpt": excerpt, "analysis_id": wanted}  # fmt: skip
    if not done or entry.action not in SAVED:
        return None
    undo = await run_in_threadpool(review.undoable, found, user.username) if entry.action != "note" else None
    return {
        "kind": "saved",
        "message": "Saved: " + SAVED[entry.action].format(label=label) + ".",
        "excerpt": excerpt,
        "analysis_id": wanted,
        "undo_sequence": newest_sequence(found) if undo is not None else None,
    }


async def item_or_404(review: Review, analysis_id: str) -> ReviewItem:
    found = await run_in_threadpool(review.item, analysis_id)
    if found is None:
        raise NotFound(f"no stored analysis has the id '{analysis_id}'")
    return found


async def csrf_of(request: Request) -> str:
    signed_in = await current_session(request)
    return signed_in.csrf_token if signed_in else ""


@router.get("/review", response_class=HTMLResponse)
async def queue(
    request: Request,
    user: Moderator,
    review: ReviewDep,
    filters: FilterDep,
    templates: TemplatesDep,
    done: str | None = None,
    undone: str | None = None,
) -> Response:
    items = await run_in_threadpool(review.queue, filters)
    context = {
        "items": items,
        "filters": filters,
        "kinds": KINDS,
        "categories": CATEGORIES,
        "user": user,
        "item_url": item_url,
        "csrf": await csrf_of(request),
        "flash": await flash_of(review, user, done, undone),
    }
    return templates.TemplateResponse(request, "review.html", context)


@router.get("/review/decided", response_class=HTMLResponse)
async def decided(
    request: Request,
    user: Moderator,
    review: ReviewDep,
    templates: TemplatesDep,
    label: str | None = None,
    moderator: str | None = None,
    site: str | None = None,
    language: str | None = None,
    since: str | None = None,
    done: str | None = None,
    undone: str | None = None,
) -> Response:
    """The items moderators decided, newest first, with their newest decision: to check or change one again."""
    filters = DecidedFilter.parse(label, moderator, site, language, since)
    items = await run_in_threadpool(review.decided, filters)
    context = {
        "items": items,
        "filters": filters,
        "labels": DECIDED_LABELS,
        "user": user,
        "csrf": await csrf_of(request),
        "flash": await flash_of(review, user, done, undone),
    }
    return templates.TemplateResponse(request, "review_decided.html", context)


@router.get("/review/{analysis_id}", response_class=HTMLResponse)
async def item(
    analysis_id: str,
    request: Request,
    user: Moderator,
    review: ReviewDep,
    services: ServicesDep,
    filters: FilterDep,
    templates: TemplatesDep,
    done: str | None = None,
    undone: str | None = None,
) -> Response:
    found = await item_or_404(review, analysis_id)
    previous, following = await run_in_threadpool(review.neighbours, analysis_id, filters)
    document = found.document
    term_rules = await run_in_threadpool(review.term_rules, found)
    similar = await run_in_threadpool(
        precedents.similar_decisions, services.store.engine, document, found.site_key, exclude=analysis_id
    )
    context = {
        "term_rules": term_rules,
        "similar": similar,
        "item": found,
        "result": document,
        "segments": segments(document["text"], document["hits"]),
        "filters": filters,
        "previous_url": item_url(previous, filters) if previous else None,
        "next_url": item_url(following, filters) if following else None,
        "queue_url": item_url(None, filters),
        "user": user,
        "csrf": await csrf_of(request),
        "flash": await flash_of(review, user, done, undone),
        "seen": newest_sequence(found),
        "disputes": [f for f in found.feedback if not f.helpful],
    }
    return templates.TemplateResponse(request, "review_item.html", context)


@router.post("/review/{analysis_id}/terms")
async def term_rule(
    analysis_id: str,
    request: Request,
    user: Moderator,
    review: ReviewDep,
    services: ServicesDep,
    filters: FilterDep,
    term_id: Annotated[str, Form(max_length=200)],
    rule: Annotated[str, Form(max_length=16)],
    csrf: Annotated[str, Form()] = "",
) -> Response:
    """Marks a term ambiguous or excluded for the item's site; the site's next analyses use the rule."""
    await check_csrf(request, csrf)
    found = await item_or_404(review, analysis_id)
    await run_in_threadpool(review.set_term_rule, found, user.username, term_id, rule)
    if found.site_key:
        services.sites.forget(found.site_key)
    return RedirectResponse(item_url(analysis_id, filters), status_code=303)


@router.post("/review/{analysis_id}")
async def act(
    analysis_id: str,
    request: Request,
    user: Moderator,
    review: ReviewDep,
    services: ServicesDep,
    filters: FilterDep,
    action: Annotated[str, Form(max_length=32)],
    csrf: Annotated[str, Form()] = "",
    label: Annotated[str, Form(max_length=16)] = "",
    explanation: Annotated[str, Form(max_length=4_000)] = "",
    note: Annotated[str, Form(max_length=4_000)] = "",
    seen: Annotated[int | None, Form(ge=0)] = None,
    back: Annotated[str, Form(max_length=16)] = "",
) -> Response:
    await check_csrf(request, csrf)
    if ":" in action and not label:
        # the item page's buttons say both at once ("overturn:flagged"): a button carries one value
        action, _, label = action.partition(":")
    found = await item_or_404(review, analysis_id)
    if action == "decide":
        # the queue list's buttons name the label only: agreeing with the automatic label is a confirmation
        action = "confirm" if label == found.automatic_label else "overturn"
    entry = await run_in_threadpool(review.act, found, user.username, action, label, explanation, note, seen)
    if entry.action in ("confirm", "overturn"):
        form = await request.form()
        chosen = {name[4:]: str(value) for name, value in form.items() if name.startswith("hit:")}
        decided = json.loads(entry.after)["label"]
        await run_in_threadpool(review.learn, found, decided, chosen, user.username)
    # the widget keeps finished documents as bytes; this one now reads differently
    services.widget.forget(analysis_id)
    if back == "queue":
        return RedirectResponse(item_url(None, filters, done=analysis_id), status_code=303)
    _, following = await run_in_threadpool(review.neighbours, analysis_id, filters)
    return RedirectResponse(item_url(following, filters, done=analysis_id), status_code=303)


@router.post("/review/{analysis_id}/undo")
async def undo(
    analysis_id: str,
    request: Request,
    user: Moderator,
    review: ReviewDep,
    services: ServicesDep,
    filters: FilterDep,
    csrf: Annotated[str, Form()] = "",
    sequence: Annotated[int, Form(ge=0)] = 0,
) -> Response:
    """Takes back the moderator's own decision of a moment ago; the item page then shows the state restored."""
    await check_csrf(request, csrf)
    found = await item_or_404(review, analysis_id)
    if not found.decisions:
        raise ReviewError("this item has no moderator decision to undo")
    if sequence < 1:
        raise ReviewError("say which decision to undo: the form's sequence number is missing")
    await run_in_threadpool(review.undo, found, user.username, sequence)
    await run_in_threadpool(review.relearn, found)
    services.widget.forget(analysis_id)
    return RedirectResponse(item_url(analysis_id, filters, undone=analysis_id), status_code=303)
