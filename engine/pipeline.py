"""One configuration of the whole pipeline (vocabularies, models, mode, threshold), from options or a TOML file.

`unerase eval --compare other.toml` and `unerase audit` run configurations side by side; the TOML file
uses the keys of the server's settings file (docs/settings.md), so the file a site deploys with is the
file it measures. Keys that do not concern the pipeline (port, database, ...) are ignored; keys the
file leaves out keep the values of the configuration it is applied to.
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
from engine.errors import UneraseError
from engine.llm.backend import LLMBackend
from engine.llm.factory import BACKENDS, make_backend
from engine.matching.index import default_cache_dir
from engine.paths import shipped_vocabularies
from engine.precedents import PrecedentSource
from engine.vocabulary.loader import load_vocabularies


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

    @classmethod
    def from_args(cls, args: argparse.Namespace, name: str = "current") -> PipelineConfig:
        """From the options `engine.cli.common.add_backend_arguments` defines."""
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
    if "data_dir" in data:
        changes["cache"] = str(Path(_typed(data, "data_dir", str, name, "a folder")) / "llm-cache.sqlite")
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


def load_detector(config: PipelineConfig) -> Detector:
    return Detector(load_vocabularies(list(config.vocabularies) or [shipped_vocabularies()]))


@contextlib.asynccontextmanager
async def open_pipeline(
    config: PipelineConfig,
    detector: Detector | None = None,
    router: BackendRouter | None = None,
    *,
    precedents: PrecedentSource | None = None,
    needs_model: str | None = None,
) -> AsyncIterator[Analyzer]:
    """An Analyzer for the configuration; the model clients and the answer cache it opened are closed on exit.

    `router` replaces the configured models (tests pass a scripted backend here); `precedents` are a site's
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
    try:
        yield Analyzer(
            detector or load_detector(config), router, cache=cache, config=analyzer_config, precedents=precedents
        )
    finally:
        for backend in made:
            await backend.aclose()
        if cache is not None:
            cache.close()
