"""Language detection with a confidence, refusing politely when unsure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import simplemma

from engine.errors import LanguageNotDetected


@dataclass(frozen=True, slots=True)
class DetectedLanguage:
    language: str
    confidence: float


class LanguageDetector(Protocol):
    def detect(self, text: str, candidates: tuple[str, ...]) -> DetectedLanguage: ...


class SimplemmaDetector:
    """Share of tokens that simplemma's dictionary of each language knows."""

    def __init__(self, threshold: float = 0.3, margin: float = 0.05, max_chars: int = 5000) -> None:
        self.threshold = threshold
        self.margin = margin  # a best guess that ties with the next one is no guess
        self.max_chars = max_chars  # a sample is enough, and keeps 1 MB texts cheap

    def detect(self, text: str, candidates: tuple[str, ...]) -> DetectedLanguage:
        scores = simplemma.langdetect(text[: self.max_chars], lang=candidates)
        ranked = sorted(((score, lang) for lang, score in scores if lang != "unk"), reverse=True)
        if not ranked:
            ranked = [(0.0, candidates[0])]
        confidence, best = ranked[0]
        runner_up = ranked[1][0] if len(ranked) > 1 else 0.0
        if confidence - runner_up < self.margin:
            tied = ", ".join(lang for score, lang in ranked if score == confidence)
            raise LanguageNotDetected(
                f"the text fits several languages equally well ({tied} "
                f"at {confidence:.2f}); give the language explicitly, one of: {', '.join(candidates)}"
            )
        if confidence < self.threshold:
            raise LanguageNotDetected(
                f"the language could not be detected with enough confidence (best guess '{best}' at "
                f"{confidence:.2f}, below {self.threshold:.2f}); give the language explicitly, one of: "
                f"{', '.join(candidates)}"
            )
        return DetectedLanguage(best, round(float(confidence), 3))
