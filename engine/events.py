"""The analysis event stream (docs/contracts.md): typed, ordered, always ending with `done`.

Each event is a frozen dataclass with a `type` (the SSE event name) and `to_dict()` (its JSON
payload). The engine yields them; the web layer renders them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from engine.hits import Hit

VerdictStatus = Literal["contentious", "neutral", "undetermined"]
TargetingStatus = Literal["hateful", "not_hateful", "undetermined", "skipped"]
Label = Literal["flagged", "not_flagged", "needs_review"]
Severity = Literal["none", "slight", "moderate", "high"]
Faithfulness = Literal["faithful", "repaired", "unfaithful", "not_checked"]


@dataclass(frozen=True, slots=True)
class Quote:
    text: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class AnalysisStarted:
    type: ClassVar[str] = "analysis"
    analysis_id: str
    language: str
    language_detected: bool
    language_confidence: float
    mode: str
    vocabulary_version: str
    prompt_version: str
    models: tuple[str, ...]
    hit_count: int = 0  # how many `hit` events follow, so a renderer knows when the text is complete

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis_id": self.analysis_id,
            "language": self.language,
            "language_detected": self.language_detected,
            "language_confidence": self.language_confidence,
            "mode": self.mode,
            "vocabulary_version": self.vocabulary_version,
            "prompt_version": self.prompt_version,
            "models": list(self.models) or ["none"],
            "hit_count": self.hit_count,
        }


@dataclass(frozen=True, slots=True)
class HitFound:
    type: ClassVar[str] = "hit"
    hit: Hit
    # how the rules read the hit's use (engine.uses): attack, quoted, reported, reclaimed or historical
    use: str = "attack"
    use_cue: str = ""  # the evidence for it: a cue phrase or "quotation marks"

    def to_dict(self) -> dict[str, Any]:
        data = self.hit.to_dict()
        data["use"] = self.use
        if self.use_cue:
            data["use_cue"] = self.use_cue
        return data


@dataclass(frozen=True, slots=True)
class Verdict:
    type: ClassVar[str] = "verdict"
    hit_id: str
    status: VerdictStatus
    confidence: float
    explanation: str
    decided_by: str
    reason: str = ""  # why undetermined, for moderators
    precedents: tuple[str, ...] = ()  # ids of the earlier moderator decisions a "precedent" verdict rests on
    # the hit's use (engine.uses): a contentious hit only flags the text when it is an attack; a model that judged
    # the hit contentious overrules the rules' reading of a quotation or a reclaimed use
    use: str = "attack"
    use_cue: str = ""

    @property
    def mention(self) -> bool:
        """Quoted, reported, reclaimed or historical: explained to readers, not held against the author."""
        return self.use != "attack"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "hit_id": self.hit_id,
            "status": self.status,
            "confidence": round(self.confidence, 3),
            "explanation": self.explanation,
            "decided_by": self.decided_by,
            "use": self.use,
        }
        if self.use_cue:
            data["use_cue"] = self.use_cue
        if self.reason:
            data["reason"] = self.reason
        if self.precedents:
            data["precedents"] = list(self.precedents)
        return data


@dataclass(frozen=True, slots=True)
class Targeting:
    type: ClassVar[str] = "targeting"
    status: TargetingStatus
    characteristics: tuple[str, ...] = ()
    explanation: str = ""
    quotes: tuple[Quote, ...] = ()
    confidence: float = 0.0
    decided_by: str = ""
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status,
            "characteristics": list(self.characteristics),
            "explanation": self.explanation,
            "quotes": [{"text": q.text, "start": q.start, "end": q.end} for q in self.quotes],
            "confidence": round(self.confidence, 3),
            "decided_by": self.decided_by,
        }
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True, slots=True)
class ExplanationDelta:
    type: ClassVar[str] = "explanation-delta"
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text}


@dataclass(frozen=True, slots=True)
class Explanation:
    type: ClassVar[str] = "explanation"
    text: str
    cited_hits: tuple[str, ...]
    faithfulness: Faithfulness
    problems: tuple[str, ...] = ()
    decided_by: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "text": self.text,
            "cited_hits": list(self.cited_hits),
            "faithfulness": self.faithfulness,
            "decided_by": self.decided_by,
        }
        if self.problems:
            data["problems"] = list(self.problems)
        return data


@dataclass(frozen=True, slots=True)
class Decision:
    type: ClassVar[str] = "decision"
    label: Label
    severity: Severity
    confidence: float
    categories: tuple[str, ...]
    reasons: tuple[str, ...]
    proposed: Label | None = None  # when deferred for low confidence: the label the rules gave
    uses: tuple[str, ...] = ()  # the mentions recognised (quoted, reported, reclaimed, historical), each once

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "label": self.label,
            "severity": self.severity,
            "confidence": round(self.confidence, 3),
            "categories": list(self.categories),
            "reasons": list(self.reasons),
        }
        if self.proposed is not None:
            data["proposed_label"] = self.proposed
        if self.uses:
            data["uses"] = list(self.uses)
        return data


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    type: ClassVar[str] = "error"
    code: str
    message: str
    stage: str

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "stage": self.stage}


@dataclass(frozen=True, slots=True)
class Done:
    type: ClassVar[str] = "done"
    elapsed_ms: float
    cached: bool
    llm_calls: int = field(default=0)

    def to_dict(self) -> dict[str, Any]:
        return {"elapsed_ms": round(self.elapsed_ms, 1), "cached": self.cached, "llm_calls": self.llm_calls}


Event = AnalysisStarted | HitFound | Verdict | Targeting | ExplanationDelta | Explanation | Decision | ErrorEvent | Done
