"""Reading model answers without ever failing open.

Every parser returns a status and, when it cannot be sure, `undetermined` with the reason:
missing, misnamed, repeated or unclosed tags, prose outside the tags, an unknown verdict word,
an empty or truncated answer, an explanation in the wrong language. Nothing defaults to
"not hateful" or "neutral".
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import simplemma

from engine.llm.backend import Completion

_TAG_RE = re.compile(r"<\s*(/?)\s*([A-Za-z_][\w-]*)\s*>")
_FENCE_RE = re.compile(r"^```[\w-]*\s*|\s*```$")
QUOTE_RE = re.compile(r"\"([^\"]{2,})\"|“([^”]{2,})”|«\s?([^»]{2,}?)\s?»|„([^“”]{2,})[“”]")
DETECTABLE = ("en", "fr", "el", "de", "nl", "it", "pt")


@dataclass(frozen=True, slots=True)
class Parsed:
    status: str  # a verdict word, or "undetermined"
    explanation: str = ""
    reason: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    confidence: float | None = None

    def field(self, name: str) -> str:
        return dict(self.fields).get(name, "")


def undetermined(reason: str) -> Parsed:
    return Parsed("undetermined", reason=reason)


def split_tags(text: str, expected: tuple[str, ...]) -> tuple[dict[str, str], str | None]:
    """The content of each expected tag, or the reason the answer is not well formed."""
    body = _FENCE_RE.sub("", text.strip())
    found: dict[str, str] = {}
    position = 0
    outside: list[str] = []
    while (match := _TAG_RE.search(body, position)) is not None:
        closing, name = match.group(1), match.group(2).lower()
        if closing:
            return found, f"unexpected closing tag </{name}>"
        if name not in expected:
            return found, f"unknown tag <{name}>; expected {', '.join(f'<{t}>' for t in expected)}"
        if name in found:
            return found, f"the tag <{name}> appears more than once"
        outside.append(body[position : match.start()])
        end = re.compile(rf"<\s*/\s*{re.escape(name)}\s*>", re.IGNORECASE).search(body, match.end())
        if end is None:
            return found, f"the tag <{name}> is never closed (truncated answer?)"
        content = body[match.end() : end.start()]
        if _TAG_RE.search(content):
            return found, f"the tag <{name}> contains another tag"
        found[name] = content.strip()
        position = end.end()
    outside.append(body[position:])
    if not found:
        return found, f"the answer has none of the expected tags ({', '.join(f'<{t}>' for t in expected)})"
    prose = " ".join(" ".join(outside).split())
    if prose:
        return found, f"text outside the tags: {prose[:60]!r}"
    return found, None


def _check_language(explanation: str, language: str) -> str | None:
    """Catch the usual slip of small models: answering in English to a prompt in another
    language. Comparing only with English keeps the check to two dictionaries in memory."""
    if language == "en" or len(explanation.split()) < 6 or language not in DETECTABLE:
        return None
    scores = dict(simplemma.langdetect(explanation, lang=(language, "en")))
    if scores.get("en", 0.0) >= 0.5 and scores.get(language, 0.0) < scores["en"] / 2:
        return f"the explanation is written in 'en', expected '{language}'"
    return None


def verdict_confidence(completion: Completion, verdict: str) -> float | None:
    """Probability of the first token of the verdict word, from the backend's log-probabilities."""
    if not completion.token_logprobs:
        return None
    target = completion.text.find(verdict, completion.text.find("<verdict>") + 1)
    if target < 0:
        return None
    offset = 0
    for token, logprob in completion.token_logprobs:
        if offset <= target < offset + len(token) or (offset > target and token.strip()):
            return min(1.0, math.exp(logprob))
        offset += len(token)
    return None


def parse_answer(completion: Completion, *, verdicts: tuple[str, ...], tags: tuple[str, ...], language: str) -> Parsed:
    text = completion.text
    if not text.strip():
        return undetermined("the model gave an empty answer")
    found, problem = split_tags(text, tags)
    if problem is not None:
        return undetermined(problem)
    if completion.finish_reason == "length":
        return undetermined("the answer was cut off at the token limit")
    for name in tags:
        if name != "reasoning" and name not in found:
            return undetermined(f"the answer has no <{name}> tag")
    explanation = found.get("explanation", "")
    if not explanation:
        return undetermined("the explanation is empty")
    wrong_language = _check_language(explanation, language)
    if wrong_language:
        return undetermined(wrong_language)
    status: str = ""
    if "verdict" in tags:
        word = found["verdict"].strip().strip(".\"'`*").lower().replace("-", "_").replace(" ", "_")
        if word not in verdicts:
            return undetermined(f"unknown verdict {found['verdict'][:30]!r}; expected one of {', '.join(verdicts)}")
        status = word
    return Parsed(
        status=status or "ok",
        explanation=" ".join(explanation.split()),
        fields=tuple(found.items()),
        confidence=verdict_confidence(completion, status) if status else None,
    )


def parse_disambiguation(completion: Completion, language: str) -> Parsed:
    return parse_answer(
        completion,
        verdicts=("contentious", "neutral"),
        tags=("reasoning", "verdict", "explanation"),
        language=language,
    )


def parse_targeting(completion: Completion, language: str, categories: tuple[str, ...]) -> Parsed:
    parsed = parse_answer(
        completion,
        verdicts=("hateful", "not_hateful"),
        tags=("reasoning", "verdict", "targets", "explanation"),
        language=language,
    )
    if parsed.status == "undetermined":
        return parsed
    raw = parsed.field("targets").lower()
    targets = tuple(dict.fromkeys(t.strip().replace(" ", "-").replace("_", "-") for t in raw.split(",") if t.strip()))
    targets = tuple(t for t in targets if t not in ("none", "-"))
    unknown = [t for t in targets if t not in categories]
    if unknown:
        return undetermined(f"unknown characteristic(s) {unknown}; expected some of {', '.join(categories)}")
    if parsed.status == "hateful" and not targets:
        return undetermined("'hateful' without a targeted characteristic")
    if parsed.status == "not_hateful" and targets:
        return undetermined("'not_hateful' but characteristics named as attacked")
    return Parsed(parsed.status, parsed.explanation, "", (("targets", ",".join(targets)),), parsed.confidence)


def parse_fusion(completion: Completion, language: str) -> Parsed:
    return parse_answer(completion, verdicts=(), tags=("explanation",), language=language)


def quotes_in(explanation: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in QUOTE_RE.finditer(explanation)]
