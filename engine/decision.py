"""The decision rules of docs/contracts.md, with a severity band and the reasons stated.

- not_flagged only when no hit is contentious *and* the targeting stage says not_hateful (or
  was skipped in vocabulary-only mode, which the reasons say);
- an undetermined stage that could change the label gives needs_review, unless the other
  pipeline already flags the text;
- a confidence below the site's threshold τ defers the decision to a moderator;
- a quoted, reported, reclaimed or historical use (a mention, engine.uses) is explained, not held against the
  author: it neither flags the text nor leaves it for review.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.events import Decision, Label, Severity, Targeting, Verdict
from engine.hits import Hit
from engine.uses import USE_CONFIDENCE

# Without a language model the text may still attack a group with no vocabulary term; the
# term-based pipeline alone has low recall, so its "nothing found" is not worth much.
VOCABULARY_ONLY_CLEAR_CONFIDENCE = 0.6


USE_WORDS = {
    "quoted": "is quoted",
    "reported": "is reported or named as a word",
    "reclaimed": "is used by the author about their own group (reclaimed)",
    "historical": "is a historical or catalogue use",
}


def decide(hits: Sequence[Hit], verdicts: dict[str, Verdict], targeting: Targeting, *, threshold: float) -> Decision:
    """The label from the verdicts (each carrying its hit's use) and the term-free check.

    A mention (a quoted, reported, reclaimed or historical use, engine.uses) never flags the text and, whatever
    its sense, cannot change the label: it is neither contentious nor unsure here; the reasons name it. The
    categories are the groups the text may target: every attacking hit judged contentious *or* undetermined
    (an undecided hit is why the text waits for review) and the term-free check's characteristics.
    """
    judged = [(h, verdicts[h.id]) for h in hits if h.id in verdicts]
    mentions = [(h, v) for h, v in judged if v.mention and v.status != "neutral"]
    contentious = [v for _, v in judged if v.status == "contentious" and not v.mention]
    unsure = [h for h in hits if h.id not in verdicts or _undecided(verdicts[h.id])]
    hateful = targeting.status == "hateful"
    categories = tuple(
        dict.fromkeys(
            [c for h, v in judged if v.status == "contentious" and not v.mention for c in h.issue.categories]
            + [c for h in unsure for c in h.issue.categories]
            + (list(targeting.characteristics) if hateful else [])
        )
    )
    reasons: list[str] = []
    for hit, verdict in mentions:
        cue = f" ({verdict.use_cue})" if verdict.use_cue else ""
        undecided = "could not be decided, and " if verdict.status == "undetermined" else ""
        reasons.append(
            f"“{hit.surface}” {undecided}{USE_WORDS.get(verdict.use, verdict.use)}{cue}: "
            "explained, not held against the author"
        )
    label: Label
    if contentious or hateful:
        label = "flagged"
        if contentious:
            reasons.append(f"{len(contentious)} contentious term(s)")
            # what made a hit an attack when the use rules saw a cue: '"…". Nothing to add.', "…, you …"
            reasons += [
                f"“{h.surface}” is read as used against people ({v.use_cue})"
                for h, v in judged
                if v.status == "contentious" and not v.mention and v.use == "attack" and v.use_cue
            ]
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
        # a mention is as sure as the rule that recognised it, whatever (or however unsure) its sense
        stage_confidences = [max(v.confidence, USE_CONFIDENCE) if v.mention else v.confidence for _, v in judged]
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
    # the mentions of words known to hurt (contentious), which readers are offered to read about; a mention whose
    # sense nothing decided ("I'm a native speaker") is named in the reasons only
    uses = tuple(dict.fromkeys(v.use for _, v in mentions if v.status == "contentious"))
    return Decision(
        label, severity(contentious, hits, targeting, label), confidence, categories, tuple(reasons), proposed, uses
    )


def _undecided(verdict: Verdict) -> bool:
    return verdict.status == "undetermined" and not verdict.mention


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
