"""What the widget asks: which of a page's posts are flagged, and why.

A post is identified by its content and the configuration that judges it (site and its term rules, language, mode,
vocabulary, prompts, models): the same post under the same configuration is analysed
once, ever — reloading a page or reopening a panel reads the stored result. A check starts the
analyses it needs in the background and waits a little (`widget_wait_seconds`); what is not
finished by then is reported as running and streams into the panel when a reader opens it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select
from starlette.concurrency import run_in_threadpool

from engine.errors import UneraseError
from engine.result import StoredEvent, fold
from web.deferral import effective
from web.models import AnalysisRecord, ModeratorDecision, Site, WidgetResult
from web.results import analysis_document
from web.review import apply_to_document, apply_to_summary, latest_decisions
from web.services import Services
from web.sites import languages_of

MAX_POSTS = 100
DOCUMENTS = 20_000  # finished analysis documents kept ready to send, as bytes
DOCUMENT_SECONDS = 10.0


class StoredElsewhere(UneraseError):
    status = 503
    code = "try-again"


@dataclass(frozen=True)
class Post:
    id: str
    text: str
    lang: str | None = None


def content_key(services: Services, site: Site, text: str, language: str | None, rules: str = "") -> str:
    """`rules`: the version of the site's term rules (engine.scope.Scope.version). The site's τ and calibration
    are not part of it: they are applied when a result is read (`summary`), so changing them costs no analysis."""
    analyzer = services.analyzer
    parts = (
        rules,
        site.key,
        text,
        language or "",
        site.mode,
        analyzer.detector.vocabulary.version,
        analyzer.prompts.version,
        ",".join(sorted(b.model_id for b in analyzer.backends.all())),
    )
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


def button(site: Site, label: str, mentions: bool) -> str | None:
    """The widget's button for a post: "why" (Why flagged?) on a flagged post; "about" (About this word) on a post
    that only quotes, reports or reclaims a word (docs/uses.md); on a post nothing could decide,
    what the site chose (`show_undecided`): nothing (the default, as an "Under review" reads as an accusation),
    "words" (a neutral "About these words") or "review" (Under review). None: no button."""
    if label == "flagged":
        return "why"
    if label == "needs_review":
        return {"about": "words", "review": "review"}.get(site.show_undecided) or ("about" if mentions else None)
    return "about" if mentions else None


def summary(
    analysis_id: str,
    post_id: str,
    events: Sequence[StoredEvent],
    site: Site,
    moderator: ModeratorDecision | None = None,
) -> dict[str, Any]:
    """One post's answer: the label the widget shows, with the site's calibration and threshold applied
    (web.deferral.effective: below τ, flagged and not_flagged alike become needs_review, "under review");
    a moderator's decision, when there is one, replaces the automatic label whatever the threshold says."""
    result = fold(events)
    decision = result["decision"]
    mentions = bool(decision and decision.get("uses"))
    if moderator is not None:
        severity = decision["severity"] if decision else None
        answer = {"id": post_id, "analysis_id": analysis_id, "label": "", "severity": severity, "status": "complete"}
        answer = apply_to_summary(answer, moderator)
        return {**answer, "button": button(site, answer["label"], mentions)}
    if decision is None:
        # still running: an unambiguous term used against someone already flags it; other hits wait for their
        # verdicts (a hit the rules read as quoted or reclaimed flags nothing, engine.uses)
        hits = [h for h in result["hits"] if h.get("use", "attack") == "attack"]
        label = "flagged" if any(not h["ambiguous"] for h in hits) else "needs_review" if hits else "pending"
        return {
            "id": post_id,
            "analysis_id": analysis_id,
            "label": label,
            "severity": None,
            "status": "running",
            "button": button(site, label, False) if label != "pending" else None,
        }
    label, _ = effective(site, decision)  # the site's own calibration and τ, not the server's global τ
    return {
        "id": post_id,
        "analysis_id": analysis_id,
        "label": label,
        "severity": decision["severity"],
        "status": "complete",
        "button": button(site, label, mentions),
    }


def as_site_shows(site: Site, event: StoredEvent) -> StoredEvent:
    """An event of the stream as the site shows it: the decision with the site's calibration and τ (the panel
    that follows a running analysis then ends on the label its button will show)."""
    if event["type"] != "decision":
        return event
    label, reasons = effective(site, event["data"])
    return {**event, "data": {**event["data"], "label": label, "reasons": list(reasons)}}


class Widget:
    def __init__(self, services: Services) -> None:
        self.services = services
        self._memory_keys: OrderedDict[str, str] = OrderedDict()  # no-store sites: content key -> analysis id
        self._memory_sites: OrderedDict[str, str] = OrderedDict()  # no-store sites: analysis id -> site key
        # finished documents ready to send, with the time they were made: another worker process may
        # record a moderator's decision, which this one learns by rebuilding after DOCUMENT_SECONDS
        self.documents: OrderedDict[str, tuple[float, str, bytes]] = OrderedDict()

    def _known(self, site: Site, keys: list[str]) -> dict[str, str]:
        if not site.store:
            return {k: self._memory_keys[k] for k in keys if k in self._memory_keys}
        with Session(self.services.store.engine) as session:
            rows = session.exec(select(WidgetResult).where(col(WidgetResult.cache_key).in_(keys)))
            return {row.cache_key: row.analysis_id for row in rows}

    def _create(self, site: Site, new: list[tuple[str, AnalysisRecord]]) -> set[str]:
        """Stores the new analyses with their content keys; returns the keys another request stored first.

        Two readers opening the same new post at once both find it unknown and both try to store it: the
        database keeps the first, and the other's record is dropped with its key, so it reads the first one's
        answer back instead of failing or analysing the post a second time. All keys go in one transaction;
        only when that one is refused are they stored one at a time, to learn which were taken."""
        if not site.store or not new:
            return set()
        try:
            self._insert(site, new)
            return set()
        except IntegrityError:
            pass
        taken = set()
        for key, record in new:
            try:
                self._insert(site, [(key, record)])
            except IntegrityError:
                taken.add(key)
        return taken

    def _insert(self, site: Site, new: list[tuple[str, AnalysisRecord]]) -> None:
        with Session(self.services.store.engine, expire_on_commit=False) as session:
            for key, record in new:
                session.add(record)
                session.flush()
                session.add(WidgetResult(cache_key=key, site_key=site.key, analysis_id=record.id))
            session.commit()

    def owns(self, site: Site, analysis_id: str) -> bool:
        """Whether the site's widget made this analysis: a site's posts are served by its own widget only, not by
        another site's (whose key is as public) nor by the public API (web.routes.analyses.load_record)."""
        if not site.store:
            return self._memory_sites.get(analysis_id) == site.key
        with Session(self.services.store.engine) as session:
            query = select(WidgetResult.cache_key).where(
                WidgetResult.analysis_id == analysis_id, WidgetResult.site_key == site.key
            )
            return session.exec(query.limit(1)).first() is not None

    def _events(self, analysis_id: str) -> list[StoredEvent] | None:
        if analysis_id in self.services.runs.memory:
            return self.services.runs.memory[analysis_id][1]
        run = self.services.runs.current(analysis_id)
        if run is not None:
            return list(run.events)
        record = self.services.store.analysis(analysis_id)
        if record is None:
            return None
        events: list[StoredEvent] = json.loads(record.events)
        return events

    def _language(self, post: Post, page_language: str | None, allowed: tuple[str, ...]) -> str:
        """The post's own language if marked; else detected; else the page's (a hint, not a rule:
        a thread on an English page may hold Greek posts)."""
        if post.lang in allowed:
            return post.lang
        try:
            return self.services.detector.language_detector.detect(post.text, allowed).language
        except UneraseError:
            return page_language if page_language in allowed else allowed[0]

    async def check(self, site: Site, posts: Sequence[Post], page_language: str | None) -> list[dict[str, Any]]:
        services = self.services
        allowed = tuple(languages_of(site) or services.detector.languages)
        languages = [self._language(post, page_language, allowed) for post in posts]
        scope = await run_in_threadpool(services.sites.scope, site.key)  # cached for a few seconds
        keys = [
            content_key(services, site, p.text, lang, scope.version) for p, lang in zip(posts, languages, strict=True)
        ]
        known = await run_in_threadpool(self._known, site, list(set(keys)))
        new: dict[str, AnalysisRecord] = {}
        for key, post, language in zip(keys, posts, languages, strict=True):
            if key not in known and key not in new:
                new[key] = AnalysisRecord(
                    id=uuid.uuid4().hex, text=post.text, requested_language=language, mode=site.mode, source="widget"
                )
        taken = await run_in_threadpool(self._create, site, list(new.items()))
        if taken:  # stored by another request meanwhile: its analysis answers, this one is not made
            known.update(await run_in_threadpool(self._known, site, list(taken)))
            missing = taken - known.keys()
            if missing:
                raise StoredElsewhere(f"{len(missing)} posts were stored by another request and then gone; ask again")
        for key in list(new):
            if key in known:
                del new[key]
            elif not site.store and key in self._memory_keys:
                # no-store sites: a request that checked the same post while this one waited started it first
                known[key] = self._memory_keys[key]
                del new[key]
        runs = []
        for key, record in new.items():
            known[key] = record.id
            if not site.store:
                self._memory_keys[key] = record.id
                self._memory_sites[record.id] = site.key
                while len(self._memory_keys) > 50_000:
                    self._memory_keys.popitem(last=False)
                while len(self._memory_sites) > 50_000:
                    self._memory_sites.popitem(last=False)
            runs.append(
                services.runs.start(
                    record.id,
                    record.text,
                    record.requested_language,
                    site.mode,
                    detached=True,
                    persist=site.store,
                    scope=scope,
                ).task
            )
        pending = [task for task in runs if task is not None]
        if pending:
            await asyncio.wait(pending, timeout=services.settings.widget_wait_seconds)
        decided = await run_in_threadpool(latest_decisions, services.store.engine, known.values()) if site.store else {}
        answers = []
        for key, post in zip(keys, posts, strict=True):
            analysis_id = known[key]
            events = await run_in_threadpool(self._events, analysis_id) or []
            answers.append(summary(analysis_id, post.id, events, site, decided.get(analysis_id)))
        return answers

    async def document(self, analysis_id: str, site: Site) -> bytes | None:
        """The site's analysis as the API's JSON document (bytes), its decision as the site shows it (the site's
        τ and calibration), its links to the widget's endpoints; None if the site did not make it. Finished ones
        are kept ready to send."""
        cached = self.documents.get(analysis_id)
        if cached is not None and cached[1] == site.key and time.monotonic() - cached[0] < DOCUMENT_SECONDS:
            return cached[2]
        if not await run_in_threadpool(self.owns, site, analysis_id):
            return None
        services = self.services
        memory = services.runs.memory.get(analysis_id)
        run = services.runs.current(analysis_id)
        if memory is not None:
            record, events = memory
        elif run is not None and run.record is not None:
            record, events = run.record.model_copy(update={"status": "running"}), list(run.events)
        else:
            found = await run_in_threadpool(services.store.analysis, analysis_id)
            if found is None:
                return None
            record, events = found, json.loads(found.events)
        document = analysis_document(record, events)
        base = f"/api/v1/widget/{site.key}/analyses/{analysis_id}"
        document["links"] = {"self": base, "events": f"{base}/events"}  # the public API does not serve it
        if document["decision"] is not None:
            document["decision"] = as_site_shows(site, {"type": "decision", "data": document["decision"]})["data"]
        decided = await run_in_threadpool(latest_decisions, services.store.engine, [analysis_id])
        if analysis_id in decided:
            document = apply_to_document(document, decided[analysis_id])
        body = json.dumps(document, ensure_ascii=False).encode()
        if record.status == "complete":
            self.documents[analysis_id] = (time.monotonic(), site.key, body)
            while len(self.documents) > DOCUMENTS:
                self.documents.popitem(last=False)
        return body
