"""One configuration of the whole pipeline (vocabularies, models, mode, threshold), from options or a TOML file.

`unerase eval --compare other.toml` and `unerase audit` run configurations side by side; the TOML file
uses the keys of the server's settings file (docs/settings.md), so the file a site deploys with is the
file it measures. Keys that do not concern the pipeline (port, database, ...) are ignored; keys the
file leaves out keep the values of the configuration it is applied to.

The verdict and use sources are the web app's (web.services builds its own from `verdict_sources` and
`learned_uses` here): the labelled examples compared by embeddings and the learned reading of uses are on unless
turned off (`--no-examples`, `--no-learned-uses`, or `examples_enabled` / `learned_uses_enabled` in the file),
so the command line answers a text as the server does.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import tomllib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.analysis import MODES, Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import SQLiteCache
from engine.detector import Detector
from engine.embeddings import LazyEmbedder
from engine.errors import UneraseError
from engine.llm.backend import LLMBackend
from engine.llm.factory import BACKENDS, make_backend
from engine.matching.index import default_cache_dir
from engine.paths import shipped_vocabularies
from engine.precedents import ChainedSources, PrecedentSource
from engine.sense_examples import MIN_CONFIDENCE, ExampleProvider, ExampleSource, load_examples
from engine.use_model import LearnedUses, UseModel, shipped_use_model
from engine.vocabulary.loader import load_vocabularies

EMBEDDINGS_FILE = "embeddings.sqlite"  # the embedding cache, in the data folder beside the answers' cache


@dataclass(frozen=True)
class ModelConfig:
    backend: str = "none"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    threads: int = 2


@dataclass(frozen=True)
class PipelineConfig:
    name: str = "configuration"
    vocabularies: tuple[str, ...] = ()  # empty: the shipped vocabularies
    model: ModelConfig = ModelConfig()
    per_language: tuple[tuple[str, ModelConfig], ...] = ()
    mode: str = "fast"
    threshold: float = 0.5
    timeout: float = 120.0
    concurrency: int = 4
    cache: str | None = None  # SQLite file for model answers; None: the default in the cache folder
    use_cache: bool = True
    examples: bool = True  # decide ambiguous hits from labelled examples (engine.sense_examples)
    learned_uses: bool = True  # read uncued uses from labelled uses (engine.use_model)
    examples_min_confidence: float = MIN_CONFIDENCE
    embeddings: str | None = None  # SQLite file for embeddings; None: the default in the cache folder

    @classmethod
    def from_args(cls, args: argparse.Namespace, name: str = "current") -> PipelineConfig:
        """From the options `engine.cli.common.add_backend_arguments` defines."""
        bar = MIN_CONFIDENCE if args.examples_min_confidence is None else args.examples_min_confidence
        if not 0.0 <= bar <= 1.0:
            raise UneraseError(f"--examples-min-confidence {bar} is not accepted; give a number from 0 to 1")
        return cls(
            name=name,
            vocabularies=tuple(args.vocab or ()),
            model=ModelConfig(args.backend, args.model, args.base_url, args.api_key, args.threads),
            mode=args.mode,
            threshold=args.threshold,
            timeout=args.timeout,
            concurrency=args.concurrency,
            cache=args.cache,
            use_cache=not args.no_cache,
            examples=not args.no_examples,
            learned_uses=not args.no_learned_uses,
            examples_min_confidence=bar,
        )

    def with_toml(self, path: str | Path) -> PipelineConfig:
        """This configuration with the pipeline settings a TOML settings file gives replaced."""
        name = str(path)
        try:
            with open(path, "rb") as stream:
                data = tomllib.load(stream)
        except OSError as exc:
            raise UneraseError(f"cannot read {name!r}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise UneraseError(f"{name}: not valid TOML ({exc})") from None
        return _apply(dataclasses.replace(self, name=Path(path).stem), data, name)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "vocabularies": list(self.vocabularies) or ["shipped"],
            "backend": self.model.backend,
            "model": self.model.model,
            "per_language": {lang: m.model for lang, m in self.per_language},
            "mode": self.mode,
            "threshold": self.threshold,
            "examples": self.examples,
            "learned_uses": self.learned_uses,
        }


def _typed(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], name: str, accepted: str) -> Any:
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, kind):
        raise UneraseError(f"{name}: setting {key!r} is {value!r}; accepted: {accepted}")
    return value


def _model(data: Mapping[str, Any], name: str, prefix: str, base: ModelConfig) -> ModelConfig:
    fields: dict[str, Any] = {}
    for field, key in (("backend", "backend"), ("model", "model"), ("base_url", "base_url"), ("api_key", "api_key")):
        if prefix + key in data:
            fields[field] = _typed(data, prefix + key, str, name, "a string")
    if prefix + "threads" in data:
        fields["threads"] = _typed(data, prefix + "threads", int, name, "a whole number")
    model = dataclasses.replace(base, **fields)
    if model.backend not in BACKENDS:
        raise UneraseError(f"{name}: backend {model.backend!r} is not known; accepted: {', '.join(BACKENDS)}")
    return model


def _apply(config: PipelineConfig, data: Mapping[str, Any], name: str) -> PipelineConfig:
    changes: dict[str, Any] = {"model": _model(data, name, "llm_", config.model)}
    if "vocabularies" in data:
        paths = _typed(data, "vocabularies", list, name, "a list of files or folders")
        if not all(isinstance(p, str) for p in paths):
            raise UneraseError(f"{name}: 'vocabularies' must list paths as strings")
        # relative paths are read from the settings file's folder, so a file can travel with its vocabularies
        folder = Path(name).parent
        changes["vocabularies"] = tuple(str(p if Path(p).is_absolute() else folder / p) for p in paths)
    if "llm_languages" in data:
        table = _typed(data, "llm_languages", dict, name, "a table of languages, e.g. [llm_languages.el]")
        changes["per_language"] = tuple(
            (
                lang,
                _model(_typed(table, lang, dict, name, "a table"), f"{name} [llm_languages.{lang}]", "", ModelConfig()),
            )
            for lang in sorted(table)
        )
    if "mode" in data:
        changes["mode"] = _typed(data, "mode", str, name, " or ".join(MODES))
        if changes["mode"] not in MODES:
            raise UneraseError(f"{name}: mode {changes['mode']!r} is not known; accepted: {', '.join(MODES)}")
    if "threshold" in data:
        changes["threshold"] = float(_typed(data, "threshold", (int, float), name, "a number between 0 and 1"))
    if "llm_timeout" in data:
        changes["timeout"] = float(_typed(data, "llm_timeout", (int, float), name, "seconds"))
    if "llm_concurrency" in data:
        changes["concurrency"] = _typed(data, "llm_concurrency", int, name, "a whole number")
    for key, field in (("examples_enabled", "examples"), ("learned_uses_enabled", "learned_uses")):
        if key in data:
            if not isinstance(data[key], bool):
                raise UneraseError(f"{name}: setting {key!r} is {data[key]!r}; accepted: true or false")
            changes[field] = data[key]
    if "examples_min_confidence" in data:
        value = float(_typed(data, "examples_min_confidence", (int, float), name, "a number between 0 and 1"))
        if not 0.0 <= value <= 1.0:
            raise UneraseError(f"{name}: setting 'examples_min_confidence' is {value}; accepted: 0 to 1")
        changes["examples_min_confidence"] = value
    if "data_dir" in data:
        folder = Path(_typed(data, "data_dir", str, name, "a folder"))
        changes["cache"] = str(folder / "llm-cache.sqlite")
        changes["embeddings"] = str(folder / EMBEDDINGS_FILE)
    return dataclasses.replace(config, **changes)


def _backend(model: ModelConfig, config: PipelineConfig, needs_model: str | None = None) -> LLMBackend | None:
    return make_backend(
        model.backend,
        model.model,
        base_url=model.base_url,
        api_key=model.api_key,
        threads=model.threads,
        timeout=config.timeout,
        concurrency=config.concurrency,
        needs_model=needs_model or f"a model in configuration {config.name!r} (--model, or llm_model in its TOML file)",
    )


@dataclass(frozen=True)
class SiteSources:
    """A site's own verdict sources, read from the web app's database (web.precedents): its moderators' earlier
    verdicts by word overlap, and the same verdicts as labelled examples for the embedding vote."""

    precedents: PrecedentSource
    examples: ExampleProvider | None = None


def verdict_sources(
    *, examples: bool, min_confidence: float, cache_path: Path | None, site: SiteSources | None = None
) -> ChainedSources | None:
    """What decides ambiguous hits before the model, in order: a site's moderators' earlier verdicts on posts
    sharing words (cheap, strict), then the labelled examples compared by embeddings (the curated sentences, and
    the site's verdicts when given). None when there is no source at all. The embedding model loads on first need
    (`ExampleSource.start` loads it at once, as the web app does at start-up)."""
    sources: list[PrecedentSource] = [site.precedents] if site is not None else []
    if examples:
        curated, vectors = load_examples()
        sources.append(
            ExampleSource(
                LazyEmbedder(),
                curated,
                vectors,
                provider=site.examples if site is not None else None,
                min_confidence=min_confidence,
                cache_path=cache_path,
            )
        )
    return ChainedSources(sources) if sources else None


def example_source(sources: PrecedentSource | None) -> ExampleSource | None:
    """The example source among `sources` (a chain or one source), if there is one."""
    chain = sources.sources if isinstance(sources, ChainedSources) else (sources,)
    return next((s for s in chain if isinstance(s, ExampleSource)), None)


def learned_version(analyzer: Analyzer) -> str:
    """What the shipped learned readers are, for the keys of stored readings (web.widget.content_key): the use
    model's version and the curated examples', each empty when that source is off. A retrained model or new
    examples read a post again, as a new vocabulary does."""
    uses = analyzer.use_source.model.version if isinstance(analyzer.use_source, LearnedUses) else ""
    examples = example_source(analyzer.precedents)
    return f"{uses},{examples.version if examples is not None else ''}"


def learned_uses(enabled: bool, sources: PrecedentSource | None) -> LearnedUses | None:
    """The learned use source (engine.use_model), sharing the example source's embedder and cache when that
    source is on, so a context both read is embedded once; none when turned off or no use model is shipped."""
    model = UseModel.load(shipped_use_model()) if enabled else None
    if model is None:
        return None
    examples = example_source(sources)
    if examples is None:
        return LearnedUses(LazyEmbedder(), model)
    return LearnedUses(examples.embedder, model, examples.cache)


def load_detector(config: PipelineConfig) -> Detector:
    return Detector(load_vocabularies(list(config.vocabularies) or [shipped_vocabularies()]))


@contextlib.asynccontextmanager
async def open_pipeline(
    config: PipelineConfig,
    detector: Detector | None = None,
    router: BackendRouter | None = None,
    *,
    site: SiteSources | None = None,
    needs_model: str | None = None,
) -> AsyncIterator[Analyzer]:
    """An Analyzer for the configuration; the model clients, the answer cache and the embedding cache it opened
    are closed on exit.

    `router` replaces the configured models (tests pass a scripted backend here); `site` gives a site's own
    verdict sources (`unerase analyze --site`); `needs_model` says how to name a missing model in the caller's
    terms (the command line's `--model`)."""
    made: list[LLMBackend] = []
    if router is None:
        default = _backend(config.model, config, needs_model)
        per_language = {lang: b for lang, m in config.per_language if (b := _backend(m, config))}
        router = BackendRouter(default, per_language)
        made = router.all()
    cache = None
    if config.use_cache:
        cache = SQLiteCache(Path(config.cache) if config.cache else default_cache_dir() / "llm.sqlite")
    analyzer_config = AnalyzerConfig(
        mode=config.mode, concurrency=config.concurrency, timeout=config.timeout, threshold=config.threshold
    )
    sources = verdict_sources(
        examples=config.examples,
        min_confidence=config.examples_min_confidence,
        cache_path=Path(config.embeddings) if config.embeddings else default_cache_dir() / EMBEDDINGS_FILE,
        site=site,
    )
    try:
        yield Analyzer(
            detector or load_detector(config),
            router,
            cache=cache,
            config=analyzer_config,
            precedents=sources,
            use_source=learned_uses(config.learned_uses, sources),
        )
    finally:
        for backend in made:
            await backend.aclose()
        if cache is not None:
            cache.close()
        if (examples := example_source(sources)) is not None:
            examples.close()
