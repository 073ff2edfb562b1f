"""The statement of reasons for one decision, written for the person whose text it is: what was detected, why,
whether automated means alone or a moderator decided, which automated means were used, and how to contest it.
templates/statement.html words it; `GET /analyses/{id}/statement` serves it as HTML or JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from web.models import ModeratorDecision


@dataclass(frozen=True)
class Finding:
    """One vocabulary term found in the text, and what the automatic check made of its use here."""

    surface: str
    term: str
    categories: tuple[str, ...]
    verdict: str  # contentious, neutral, undetermined; "not judged" when no verdict came
    explanation: str
    use: str = "attack"  # attack, quoted, reported, reclaimed, historical (engine.uses)


@dataclass(frozen=True)
class Statement:
    """Why a text was labelled as it was, for the person who wrote it (templates/statement.html words it)."""

    analysis_id: str
    analysed_at: str
    text: str
    language: str | None
    findings: tuple[Finding, ...]
    term_free_status: str  # hateful, not_hateful, undetermined, skipped; "not run" when absent
    term_free_characteristics: tuple[str, ...]
    term_free_explanation: str
    explanation: str | None
    label: str
    severity: str | None  # None: a moderator decided and the automatic severity no longer describes it
    confidence: float | None  # only for an automatic decision
    reasons: tuple[str, ...]
    decided_by: str  # "automated means" or "a moderator"
    decided_on: str | None  # the date of the moderator's decision
    vocabulary_version: str
    prompt_version: str
    models: tuple[str, ...]  # empty: the vocabulary alone
    contest_url: str | None
    uses: tuple[str, ...] = ()  # the mentions the automatic check recognised (quoted, reported, ...)

    @property
    def mentioned_only(self) -> bool:
        """Not flagged, and words were found that are quoted, reported, reclaimed or historical: the person learns
        that their text was not judged hateful for them."""
        return self.label == "not_flagged" and bool(self.uses)

    def to_dict(self) -> dict[str, Any]:
        return {
            "analysis_id": self.analysis_id,
            "analysed_at": self.analysed_at,
            "text": self.text,
            "language": self.language,
            "detected": {
                "terms": [asdict(finding) for finding in self.findings],
                "term_free": {
                    "status": self.term_free_status,
                    "characteristics": list(self.term_free_characteristics),
                    "explanation": self.term_free_explanation,
                },
            },
            "explanation": self.explanation,
            "decision": {
                "label": self.label,
                "uses": list(self.uses),
                "severity": self.severity,
                "confidence": self.confidence,
                "reasons": list(self.reasons),
                "decided_by": self.decided_by,
                "decided_on": self.decided_on,
            },
            "automated_means": {
                "vocabulary_version": self.vocabulary_version,
                "prompt_version": self.prompt_version,
                "models": list(self.models) or "vocabulary only",
            },
            "contest": {
                "url": self.contest_url,
                "widget": 'the "This is wrong" button under the explanation on the forum',
                "next": "a moderator reads the text again and decides; the answer then replaces this one",
            },
        }


def statement(document: dict[str, Any], moderator: ModeratorDecision | None, contest_url: str = "") -> Statement:
    """The statement of a finished analysis (`web.results.analysis_document`) and its newest moderator decision.

    The moderator is never named: the person concerned learns that a person decided, and when.
    """
    automatic = document.get("decision") or {}
    targeting = document.get("targeting") or {}
    explanation = (document.get("explanation") or {}).get("text")
    findings = tuple(
        Finding(
            surface=hit["surface"],
            term=hit["term"],
            categories=tuple(hit.get("categories", ())),
            verdict=(hit.get("verdict") or {}).get("status", "not judged"),
            explanation=(hit.get("verdict") or {}).get("explanation", ""),
            # the verdict's use (a model may have overruled the rules); streams from before uses read as attacks
            use=(hit.get("verdict") or {}).get("use") or hit.get("use") or "attack",
        )
        for hit in document.get("hits", ())
    )
    label, severity, confidence = automatic.get("label", "needs_review"), automatic.get("severity"), None
    decided_by, decided_on = "automated means", None
    if moderator is None:
        confidence = automatic.get("confidence")
    else:
        decided_by, decided_on = "a moderator", f"{moderator.created_at:%Y-%m-%d}"
        kept = label == moderator.label or automatic.get("proposed_label") == moderator.label
        label = moderator.label
        severity = "none" if label == "not_flagged" else (severity if kept and severity != "none" else None)
        if moderator.explanation is not None:
            explanation = moderator.explanation
    models = tuple(m for m in document.get("models", ()) if m != "none")
    return Statement(
        analysis_id=document["id"],
        analysed_at=document["created_at"],
        text=document["text"],
        language=document.get("language"),
        findings=findings,
        term_free_status=targeting.get("status", "not run"),
        term_free_characteristics=tuple(targeting.get("characteristics", ())),
        term_free_explanation=targeting.get("explanation", ""),
        explanation=explanation,
        label=label,
        severity=severity,
        confidence=confidence,
        reasons=tuple(automatic.get("reasons", ())),
        decided_by=decided_by,
        decided_on=decided_on,
        vocabulary_version=document.get("vocabulary_version", ""),
        prompt_version=document.get("prompt_version", ""),
        models=models,
        contest_url=contest_url or None,
        uses=tuple(automatic.get("uses", ())),
    )
