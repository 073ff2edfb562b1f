"""The vocabulary pipeline as one object: text (and optionally a language) in, hits out.

Collaborators are passed in, so tests and deployments can plug alternatives (a Stanza
lemmatizer, another language detector, no name filter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import InvalidText, UnsupportedLanguage
from engine.hits import Hit
from engine.matching.index import LanguageIndex, build_index, default_cache_dir
from engine.matching.matcher import Matcher
from engine.text.compounds import CompoundSplitter, DictionarySplitter
from engine.text.langdetect import LanguageDetector, SimplemmaDetector
from engine.text.lemmatizer import Lemmatizer, SimplemmaLemmatizer
from engine.text.names import HeuristicNameFilter, NameFilter
from engine.text.tokenizer import RegexTokenizer, Tokenizer
from engine.vocabulary.model import Vocabulary

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Detection:
    text: str
    language: str
    language_detected: bool
    language_confidence: float
    hits: tuple[Hit, ...]
    vocabulary_version: str
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self, *, full: bool = True) -> dict[str, Any]:
        return {
            "lang": self.language,
            "lang_detected": self.language_detected,
            "lang_confidence": self.language_confidence,
            "vocabulary_version": self.vocabulary_version,
            "hits": [h.to_dict(full=full) for h in self.hits],
            **({"warnings": list(self.warnings)} if self.warnings else {}),
        }


def clean_text(text: str) -> tuple[str, tuple[str, ...]]:
    """Replace what cannot be encoded (lone surrogates) one-for-one, so offsets stay exact."""
    if not _SURROGATE_RE.search(text):
        return text, ()
    count = len(_SURROGATE_RE.findall(text))
    return _SURROGATE_RE.sub("\ufffd", text), (
        f"{count} lone surrogate code point(s) replaced by U+FFFD; offsets are unchanged",
    )


class Detector:
    def __init__(
        self,
        vocabulary: Vocabulary,
        *,
        lemmatizer: Lemmatizer | None = None,
        tokenizer: Tokenizer | None = None,
        language_detector: LanguageDetector | None = None,
        splitter: CompoundSplitter | None = None,
        name_filter: NameFilter | None = None,
        cache_dir: Path | None = None,
        use_cache: bool = True,
        obfuscation: bool = True,
        filter_names: bool = True,
    ) -> None:
        self.vocabulary = vocabulary
        self.lemmatizer = lemmatizer or SimplemmaLemmatizer()
        self.tokenizer = tokenizer or RegexTokenizer()
        self.language_detector = language_detector or SimplemmaDetector()
        self.splitter = splitter or DictionarySplitter(self.lemmatizer)
        self.name_filter = (name_filter or HeuristicNameFilter(self.lemmatizer)) if filter_names else None
        self.cache_dir = (cache_dir or default_cache_dir()) if use_cache else None
        self.obfuscation = obfuscation
        self.languages = vocabulary.languages
        self._matchers: dict[str, Matcher] = {}

    def index(self, language: str) -> LanguageIndex:
        return self.matcher(language).index

    def matcher(self, language: str) -> Matcher:
        matcher = self._matchers.get(language)
        if matcher is None:
            if language not in self.languages:
                raise UnsupportedLanguage(
                    f"language '{language}' is not supported by the loaded vocabularies; "
                    f"supported: {', '.join(self.languages) or 'none (no vocabulary loaded)'}"
                )
            index = build_index(self.vocabulary, language, self.lemmatizer, self.cache_dir)
            matcher = Matcher(index, self.tokenizer, self.splitter, self.name_filter, obfuscation=self.obfuscation)
            self._matchers[language] = matcher
        return matcher

    def detect(self, text: str, language: str | None = None) -> Detection:
        if not isinstance(text, str):
            raise InvalidText(f"text must be a string, got {type(text).__name__}")
        if not text.strip():
            raise InvalidText("the text is empty or only whitespace; give at least one word to analyse")
        text, warnings = clean_text(text)
        detected = language is None
        confidence = 1.0
        if language is None:
            guess = self.language_detector.detect(text, self.languages)
            language, confidence = guess.language, guess.confidence
        hits = tuple(self.matcher(language).find(text))
        return Detection(text, language, detected, confidence, hits, self.vocabulary.version, warnings)
