"""Lemmatizers behind one small protocol: simplemma (default, offline) and Stanza (optional)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

import simplemma

from engine.errors import BackendUnavailable, UnsupportedLanguage


class Lemmatizer(Protocol):
    """Maps one token to its lemma. `id` names the backend and its data for cache keys."""

    id: str

    def lemmatize(self, token: str, language: str) -> str: ...

    def is_known(self, token: str, language: str) -> bool: ...

    def inflections(self, language: str) -> Iterable[tuple[str, str]]:
        """(form, lemma) pairs the lemmatizer knows; may be empty."""
        ...


class SimplemmaLemmatizer:
    """Dictionary lemmatization shipped inside the simplemma package; no download needed."""

    def __init__(self) -> None:
        self.id = f"simplemma-{getattr(simplemma, '__version__', 'unknown')}"

    def lemmatize(self, token: str, language: str) -> str:
        try:
            return str(simplemma.lemmatize(token, lang=language))
        except ValueError as exc:
            raise UnsupportedLanguage(f"the lemmatizer has no data for language '{language}'") from exc

    def is_known(self, token: str, language: str) -> bool:
        try:
            return bool(simplemma.is_known(token, lang=language))
        except ValueError:
            return False

    def inflections(self, language: str) -> Iterable[tuple[str, str]]:
        """simplemma's own (already loaded) dictionary, read without copying it."""
        try:
            from simplemma.strategies.dictionaries.dictionary_factory import DEFAULT_DICTIONARY_FACTORY

            dictionary = DEFAULT_DICTIONARY_FACTORY.get_dictionary(language)
        except (ImportError, ValueError, OSError):
            return ()
        raw = getattr(dictionary, "_dict", None)
        if not isinstance(raw, dict):
            return dictionary.items()
        return _decoded(raw)


def _decoded(raw: dict[bytes, bytes]) -> Iterator[tuple[str, str]]:
    # simplemma stores bytes; decoding each distinct lemma once keeps a 1M-entry scan fast
    lemmas: dict[bytes, str] = {}
    for form, lemma in raw.items():
        text = lemmas.get(lemma)
        if text is None:
            text = lemmas[lemma] = lemma.decode("utf-8")
        yield form.decode("utf-8"), text


def stanza_resources_dir() -> Path:
    return Path(os.environ.get("STANZA_RESOURCES_DIR", Path.home() / "stanza_resources"))


def load_stanza_pipeline(language: str, processors: str) -> Any:
    """A Stanza pipeline from local models only; never downloads."""
    directory = stanza_resources_dir()
    if not (directory / language).is_dir():
        raise BackendUnavailable(
            f"Stanza models for '{language}' are not installed: expected the folder {directory / language} "
            "(set STANZA_RESOURCES_DIR to where they are); unerase never downloads models"
        )
    try:
        import stanza  # type: ignore[import-not-found]
    except ImportError as exc:
        raise BackendUnavailable("the Stanza backend needs the 'stanza' package: pip install stanza") from exc
    return stanza.Pipeline(language, dir=str(directory), processors=processors, download_method=None, verbose=False)


class StanzaLemmatizer:
    """Stanza's neural lemmatizer, used when its models are present locally."""

    def __init__(self, languages: tuple[str, ...]) -> None:
        self.id = "stanza"
        self._pipelines = {lang: load_stanza_pipeline(lang, "tokenize,pos,lemma") for lang in languages}

    def lemmatize(self, token: str, language: str) -> str:
        pipeline = self._pipelines.get(language)
        if pipeline is None:
            raise UnsupportedLanguage(
                f"no Stanza pipeline was loaded for '{language}'; loaded: {', '.join(sorted(self._pipelines))}"
            )
        doc = pipeline(token)
        words = [w.lemma or w.text for s in doc.sentences for w in s.words]
        return " ".join(words) if words else token

    def is_known(self, token: str, language: str) -> bool:
        return bool(simplemma.is_known(token, lang=language)) if language else False

    def inflections(self, language: str) -> Iterable[tuple[str, str]]:
        return ()
