"""Everything a request needs, built once in the app's lifespan (never at import time)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.engine import Engine

from engine import pipeline
from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import SQLiteCache
from engine.detector import Detector, clean_text
from engine.errors import InputTooLarge, InvalidText, UneraseError, UnsupportedLanguage
from engine.llm.backend import LLMBackend
from engine.llm.factory import make_backend
from engine.pipeline import SiteSources, example_source
from engine.precedents import ChainedSources
from engine.use_model import LearnedUses
from engine.vocabulary.loader import load_vocabularies
from web.analysis_log import new_node_id
from web.answer_cache import DatabaseCache
from web.changes import DECISION, SITE, ChangeFeed
from web.db import make_engine
from web.examples import Example, load_examples
from web.forum import Thread, load_thread
from web.logins import LoginGuard
from web.precedents import DatabaseExamples, DatabasePrecedents
from web.ratelimit import RateLimiter
from web.runs import Coordination, Runs
from web.settings import LLMSettings, Settings
from web.shared import SharedState
from web.sites import Sites
from web.store import Store
from web.upkeep import OFTEN, Upkeep
from web.widget import Widget


def build_backend(llm: LLMSettings, settings: Settings) -> LLMBackend | None:
    return make_backend(
        llm.backend,
        llm.model,
        base_url=llm.base_url,
        api_key=llm.api_key,
        threads=llm.threads,
        timeout=settings.llm_timeout,
        concurrency=settings.llm_concurrency,
        needs_model="a model: set UNERASE_LLM_MODEL (a .gguf file or a model name)",
    )


def build_router(settings: Settings) -> BackendRouter:
    return BackendRouter(
        default=build_backend(settings.llm_for(None), settings),
        per_language={lang: b for lang, llm in settings.llm_languages.items() if (b := build_backend(llm, settings))},
    )


def verdict_sources(settings: Settings, database: Engine, site_examples: bool = True) -> ChainedSources:
    """What decides ambiguous hits before the model (engine.pipeline.verdict_sources): moderators' earlier
    verdicts on posts sharing words, then the labelled examples compared by embeddings (curated sentences and,
    with `site_examples`, every moderator verdict). The embedding model starts loading now, in the background."""
    site = SiteSources(DatabasePrecedents(database), DatabaseExamples(database) if site_examples else None)
    sources = pipeline.verdict_sources(
        examples=settings.examples_enabled,
        min_confidence=settings.examples_min_confidence,
        cache_path=settings.data_dir / pipeline.EMBEDDINGS_FILE,
        site=site,
    )
    assert sources is not None  # the site's precedents are always there
    if (examples := example_source(sources)) is not None:
        examples.start()
    return sources


def learned_uses(settings: Settings, sources: ChainedSources) -> LearnedUses | None:
    """The learned use source (engine.pipeline.learned_uses), its embedding model loading now when it has one of
    its own (it shares the example source's when that source is on)."""
    source = pipeline.learned_uses(settings.learned_uses_enabled, sources)
    if source is not None:
        source.start()
    return source


@dataclass
class Services:
    settings: Settings
    detector: Detector
    analyzer: Analyzer
    store: Store
    runs: Runs
    limiter: RateLimiter
    examples: tuple[Example, ...] = field(default=())
    version: str = "0.1.0"
    sites: Sites = field(init=False)
    widget: Widget = field(init=False)
    forum: Thread | None = None
    cache: SQLiteCache | DatabaseCache | None = None  # the model answers' cache build() opened
    shared: SharedState | None = None  # rate limits, failed logins and answers other processes see too
    login_guard: LoginGuard = field(default_factory=lambda: LoginGuard(0))
    changes: ChangeFeed | None = None  # what other processes changed, read twice a second (web/changes.py)
    upkeep: Upkeep | None = None
    models: tuple[LLMBackend, ...] = ()  # the model clients build() made (not those a caller passed in)

    @classmethod
    def build(cls, settings: Settings, backends: BackendRouter | None = None) -> Services:
        """Blocking (loads vocabularies, compiles indexes, opens the database): call it in a thread."""
        detector = Detector(load_vocabularies(settings.vocabularies), cache_dir=settings.cache_dir)
        for language in detector.languages:
            detector.index(language)  # compile every language once, before the first request
        with contextlib.suppress(UneraseError):
            # language detection loads every language's dictionary on first use: do it now, not in a request
            detector.detect("warm up the language detection", None)
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        database = make_engine(settings.resolved_database_url)
        router = backends if backends is not None else build_router(settings)
        shared = SharedState.choose(settings, database)
        cache = shared.cache
        sources = verdict_sources(settings, database)
        analyzer = Analyzer(
            detector,
            router,
            cache=cache,
            config=AnalyzerConfig(
                mode=settings.mode,
                concurrency=settings.llm_concurrency,
                timeout=settings.llm_timeout,
                threshold=settings.threshold,
            ),
            precedents=sources,
            use_source=learned_uses(settings, sources),
        )
        for language in detector.languages:
            analyzer.uses.rules(language)  # read (and checked) now, not on a first request's event loop
        store = Store(database, settings.spot_check_percent)
        limiter = RateLimiter(settings.rate_limit_per_minute, shared.buckets)
        examples = tuple(e for e in load_examples() if e.lang in detector.languages)
        # several processes may share the database: analyses are claimed in it (web/runs.py, docs/deploy.md)
        coordination = Coordination(
            node=new_node_id(), lease_seconds=settings.lease_seconds, run_jobs=settings.run_jobs
        )
        runs = Runs(analyzer, store, coordination=coordination)
        services = cls(settings, detector, analyzer, store, runs, limiter, examples)
        services.forum = load_thread()
        services.sites = Sites(store, shared.buckets)
        services.sites.ensure_demo()
        services.widget = Widget(analyzer, runs, store, services.sites, settings.widget_wait_seconds)
        runs.scope_of = services.widget.scope_of  # a widget analysis taken over keeps its site's term rules
        services.cache, services.shared = cache, shared
        services.login_guard = LoginGuard(settings.login_attempts, shared.failures)
        services.changes = ChangeFeed(database)
        services.changes.on(DECISION, services.widget.forget)
        services.changes.on(SITE, services.sites.forget)
        services.changes.on(SITE, services.widget.forget_site)
        services.changes.start()
        services.upkeep = Upkeep([*shared.purges(), (services.changes.prune, OFTEN)])
        services.models = tuple(router.all()) if backends is None else ()
        return services

    async def aclose(self) -> None:
        """Closes what build() opened, when the app stops: model clients, the answer cache and the database's
        connections (left to the garbage collector, an open PostgreSQL connection is dropped mid-session)."""
        for model in self.models:
            await model.aclose()
        if self.shared is not None:
            await self.shared.aclose()
        if (examples := example_source(self.analyzer.precedents)) is not None:
            examples.close()
        await asyncio.to_thread(self.store.engine.dispose)

    @property
    def node(self) -> str:
        """This process's id among the processes sharing the database: the owner of what it claims."""
        return self.runs.node

    def background(self) -> list[Coroutine[Any, Any, None]]:
        """What runs beside the requests while the app lives: reading the change feed, housekeeping."""
        return [part.run() for part in (self.changes, self.upkeep) if part is not None]

    def status_line(self) -> dict[str, Any]:
        """What the pages say is active: mode, vocabularies, model."""
        vocabulary = self.detector.vocabulary
        models = [b.model_id for b in self.analyzer.backends.all()]
        return {
            "mode": self.mode_description(),
            "vocabularies": f"{len(vocabulary.issues):,} entries in {', '.join(self.detector.languages)}",
            "vocabulary_version": vocabulary.version[:12],
            "models": ", ".join(models) or "none",
        }

    def mode_description(self) -> str:
        models = [b.model_id for b in self.analyzer.backends.all()]
        if not models:
            return "vocabulary only (no LLM configured)"
        return f"{self.settings.mode} mode with {', '.join(models)}"

    def detect_language(self, text: str) -> str:
        """The text's language, or LanguageNotDetected saying why not and which languages can be given instead."""
        return self.detector.language_detector.detect(clean_text(text)[0], self.detector.languages).language

    def check_text(self, text: str, language: str | None) -> None:
        """Reject what cannot be analysed before anything is stored, naming what is accepted."""
        limit = self.settings.max_text_chars
        if len(text) > limit:
            raise InputTooLarge(f"the text has {len(text):,} characters; at most {limit:,} are accepted")
        if not text.strip():
            raise InvalidText("the text is empty or only whitespace; give at least one word to analyse")
        if language and language not in self.detector.languages:
            raise UnsupportedLanguage(
                f"language '{language}' is not supported; supported: {', '.join(self.detector.languages)} "
                "(or leave it out to detect the language)"
            )
