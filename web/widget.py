"""What the widget asks: which of a page's posts are flagged, and why.

A post is identified by its content and the configuration that judges it (site and its term rules, language, mode,
vocabulary, prompts, models): the same post under the same configuration is analysed
once, ever — reloading a page or reopening a panel reads the stored result. A check starts the
analyses it needs in the background and waits a little (`widget_wait_seconds`); what is not
finished by then is reported as running and streams into the panel when a reader opens it.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from starlette.concurrency import run_in_threadpool

from engine.analysis import Analyzer
from engine.errors import UneraseError
from engine.pipeline import learned_version
from engine.scope import Scope
from web.models import AnalysisRecord, Site
from web.results import analysis_document
from web.runs import Runs
from web.shown import document_as_shown, summary
from web.sites import Sites, languages_of
from web.store import Store

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


def content_key(analyzer: Analyzer, site: Site, text: str, language: str | None, rules: str = "") -> str:
    """`rules`: the version of the site's term rules (engine.scope.Scope.version). The site's τ and calibration
    are not part of it: they are applied when a result is read (web.shown.summary), so changing them costs no
    analysis. Nor are the moderator verdicts on other posts (precedents): a post keeps its reading until the
    vocabulary, the prompts, the models or the learned readers change (engine.pipeline.learned_version)."""
    parts = (
        rules,
        site.key,
        text,
        language or "",
        site.mode,
        analyzer.detector.vocabulary.version,
        analyzer.prompts.version,
        ",".join(sorted(b.model_id for b in analyzer.backends.all())),
        learned_version(analyzer),
    )
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


class Widget:
    """The widget's checks and panels, given the parts it uses (not the whole of web.services.Services)."""

    def __init__(self, analyzer: Analyzer, runs: Runs, store: Store, sites: Sites, wait: float) -> None:
        self.analyzer = analyzer
        self.runs = runs
        self.store = store
        self.sites = sites
        self.wait = wait  # seconds a check waits for new analyses (widget_wait_seconds)
        self._memory_keys: OrderedDict[str, str] = OrderedDict()  # no-store sites: content key -> analysis id
        self._memory_sites: OrderedDict[str, str] = OrderedDict()  # no-store sites: analysis id -> site key
        # finished documents ready to send, with the time they were made. A moderator's decision in another
        # process reaches this one through the change feed (web/changes.py: `forget`) within a second; rebuilding
        # after DOCUMENT_SECONDS is the fallback should the feed not be read for a while
        self.documents: OrderedDict[str, tuple[float, str, bytes]] = OrderedDict()
        self._forgotten = 0  # how many times documents were dropped: one built meanwhile may be stale already

    def forget(self, analysis_id: str) -> None:
        """Drops the document kept ready for this analysis (a moderator decided it, here or in another process:
        web/changes.py)."""
        self.documents.pop(analysis_id, None)
        self._forgotten += 1

    def forget_site(self, site_key: str) -> None:
        """Drops the documents kept ready for a site whose settings changed (τ and calibration decide what its
        documents say)."""
        for analysis_id in [a for a, (_, key, _) in self.documents.items() if key == site_key]:
            del self.documents[analysis_id]
        self._forgotten += 1

    def _known(self, site: Site, keys: list[str]) -> dict[str, str]:
        if not site.store:
            return {k: self._memory_keys[k] for k in keys if k in self._memory_keys}
        return self.store.widget_analyses(keys)

    def scope_of(self, analysis_id: str) -> Scope | None:
        """Blocking. The term rules of the site whose widget made this analysis (None: no site's), for a process
        that continues an analysis another one started (web.runs)."""
        site_key = self.store.widget_site(analysis_id)
        return self.sites.scope(site_key) if site_key is not None else None

    def owns(self, site: Site, analysis_id: str) -> bool:
        """Whether the site's widget made this analysis: a site's posts are served by its own widget only, not by
        another site's (whose key is as public) nor by the public API (web.analyses.load_record)."""
        if not site.store:
            return self._memory_sites.get(analysis_id) == site.key
        return self.store.widget_made(site.key, analysis_id)

    def _language(self, post: Post, page_language: str | None, allowed: tuple[str, ...]) -> str:
        """The post's own language if marked; else detected; else the page's (a hint, not a rule:
        a thread on an English page may hold Greek posts)."""
        if post.lang in allowed:
            return post.lang
        try:
            return self.analyzer.detector.language_detector.detect(post.text, allowed).language
        except UneraseError:
            return page_language if page_language in allowed else allowed[0]

    async def check(self, site: Site, posts: Sequence[Post], page_language: str | None) -> list[dict[str, Any]]:
        allowed = tuple(languages_of(site) or self.analyzer.detector.languages)
        languages = [self._language(post, page_language, allowed) for post in posts]
        scope = await run_in_threadpool(self.sites.scope, site.key)  # cached for a few seconds
        keys = [
            content_key(self.analyzer, site, p.text, lang, scope.version)
            for p, lang in zip(posts, languages, strict=True)
        ]
        known = await run_in_threadpool(self._known, site, list(set(keys)))
        new: dict[str, AnalysisRecord] = {}
        for key, post, language in zip(keys, posts, languages, strict=True):
            if key not in known and key not in new:
                record = AnalysisRecord(
                    id=uuid.uuid4().hex, text=post.text, requested_language=language, mode=site.mode, source="widget"
                )
                # stored claimed by this process (or queued for the workers): it runs in the background
                new[key] = self.runs.prepare(record) if site.store else record
        taken: set[str] = set()
        if site.store:
            taken = await run_in_threadpool(self.store.add_widget_analyses, site.key, list(new.items()))
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
        if site.store:
            await self.runs.launch(list(new.values()), scope)
        for key, record in new.items():
            known[key] = record.id
            if site.store:
                continue
            self._memory_keys[key] = record.id
            self._memory_sites[record.id] = site.key
            while len(self._memory_keys) > 50_000:
                self._memory_keys.popitem(last=False)
            while len(self._memory_sites) > 50_000:
                self._memory_sites.popitem(last=False)
            # kept in this process's memory only, so run here whatever the process's role
            self.runs.start(
                record.id, record.text, record.requested_language, site.mode, detached=True, persist=False, scope=scope
            )
        if new:
            await self.runs.settle([record.id for record in new.values()], self.wait)
        decided = await run_in_threadpool(self.store.latest_decisions, known.values()) if site.store else {}
        answers = []
        for key, post in zip(keys, posts, strict=True):
            analysis_id = known[key]
            found = await self.runs.lookup(analysis_id)
            events = found.events if found is not None else []
            answers.append(summary(analysis_id, post.id, events, site, decided.get(analysis_id)))
        return answers

    async def document(self, analysis_id: str, site: Site) -> bytes | None:
        """The site's analysis as the API's JSON document (bytes), its decision as the site shows it (the site's
        τ and calibration), its links to the widget's endpoints; None if the site did not make it. Finished ones
        are kept ready to send."""
        cached = self.documents.get(analysis_id)
        if cached is not None and cached[1] == site.key and time.monotonic() - cached[0] < DOCUMENT_SECONDS:
            return cached[2]
        forgotten = self._forgotten
        if not await run_in_threadpool(self.owns, site, analysis_id):
            return None
        found = await self.runs.lookup(analysis_id)
        if found is None:
            return None
        record = found.record
        document = analysis_document(record, found.events)
        base = f"/api/v1/widget/{site.key}/analyses/{analysis_id}"
        document["links"] = {"self": base, "events": f"{base}/events"}  # the public API does not serve it
        decided = await run_in_threadpool(self.store.latest_decisions, [analysis_id])
        document = document_as_shown(document, site, decided.get(analysis_id))
        body = json.dumps(document, ensure_ascii=False).encode()
        if record.status == "complete" and forgotten == self._forgotten:
            self.documents[analysis_id] = (time.monotonic(), site.key, body)
            while len(self.documents) > DOCUMENTS:
                self.documents.popitem(last=False)
        return body
