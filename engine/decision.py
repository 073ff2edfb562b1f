"""The decision rules of docs/contracts.md, with a severity band and the reasons stated.

- not_flagged only when no hit is contentious *and* the targeting stage says not_hateful (or
  was skipped in vocabulary-only mode, which the reasons say);
- an undetermined stage that could change the label gives needs_review, unless the other
  pipeline already flags the text;
- a confidence below the site's threshold τ defers the decision to a moderator.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import Decision, Label, Severity, Targeting, Verdict
from engine.hits import Hit

# Without a language model the text may still attack a group with no vocabulary term; the
# term-based pipeline alone has low recall, so its "nothing found" is not worth much.
VOCABULARY_ONLY_CLEAR_CONFIDENCE = 0.6


def decide(hits: Sequence[Hit], verdicts: dict[str, Verdict], targeting: Targeting, *, threshold: float) -> Decision:
    contentious = [verdicts[h.id] for h in hits if h.id in verdicts and verdicts[h.id].status == "contentious"]
    unsure = [h for h in hits if h.id not in verdicts or verdicts[h.id].status == "undetermined"]
    hateful = targeting.status == "hateful"
    categories = tuple(
        dict.fromkeys(
            [
                c
                for h in hits
                if verdicts.get(h.id) and verdicts[h.id].status == "contentious"
                for c in h.issue.categories
            ]
            + (list(targeting.characteristics) if hateful else [])
        )
    )
    reasons: list[str] = []
    label: Label
    if contentious or hateful:
        label = "flagged"
        if contentious:
            reasons.append(f"{len(contentious)} contentious term(s)")
        if hateful:
            reasons.append("the text attacks people for " + ", ".join(targeting.characteristics))
        confidence = max([v.confidence for v in contentious] + ([targeting.confidence] if hateful else []))
    elif unsure or targeting.status == "undetermined":
        label = "needs_review"
        if unsure:
            ambiguous = sum(1 for h in unsure if h.ambiguous)
            kind = "ambiguous term(s)" if ambiguous == len(unsure) else "term(s)"
            reasons.append(f"{len(unsure)} {kind} could not be decided")
        if targeting.status == "undetermined":
            reasons.append(
                "the term-free check was undetermined" + (f": {targeting.reason}" if targeting.reason else "")
            )
        confidence = 0.0
    else:
        label = "not_flagged"
        stage_confidences = [verdicts[h.id].confidence for h in hits]
        if targeting.status == "skipped":
            reasons.append("vocabulary-only mode: attacks without a vocabulary term were not checked")
            stage_confidences.append(VOCABULARY_ONLY_CLEAR_CONFIDENCE)
        else:
            reasons.append("no contentious term, and the term-free check found no attack")
            stage_confidences.append(targeting.confidence)
        confidence = min(stage_confidences)
    proposed: Label | None = None
    if label != "needs_review" and confidence < threshold:
        reasons.append(f"deferred: confidence {confidence:.2f} < τ {threshold:.2f}")
        proposed, label = label, "needs_review"
    return Decision(
        label, severity(contentious, hits, targeting, label), confidence, categories, tuple(reasons), proposed
    )


def severity(contentious: Sequence[Verdict], hits: Sequence[Hit], targeting: Targeting, label: Label) -> Severity:
    """none / slight / moderate / high from what was found and how sure it is."""
    if not contentious and targeting.status != "hateful":
        return "none"
    strong = [v for v in contentious if v.confidence >= 0.8]
    if (strong and targeting.status == "hateful") or len(contentious) >= 3:
        return "high"
    if strong or (targeting.status == "hateful" and targeting.confidence >= 0.7) or len(contentious) == 2:
        return "moderate"
    return "slight"
