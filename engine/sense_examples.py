"""Deciding an ambiguous hit from labelled examples of its term, compared by sentence embeddings.

The examples are the team's curated sentences (sense-examples/<lang>.yaml, generated from the annotated corpora,
see docs/examples.md) and every moderator verdict (precedents, given by an `ExampleProvider`). For a new hit, the
words around it are embedded (engine.embeddings) and compared with the examples of the same vocabulary entry
(issue) and language: the nearest ones vote, weighted by how much closer each is than the nearest. The vote's
margin becomes a confidence through a calibration measured by leave-one-out on the curated examples: the share of
them whose own vote with that margin was right. Below `min_confidence` the source declines and the hit goes on
(sense cues, the model, or undetermined): it never answers "neutral" for want of evidence.
"""

from __future__ import annotations

import asyncio
import bisect
import dataclasses
import hashlib
import logging
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np
import yaml

from engine.embeddings import EmbeddingCache, LazyEmbedder, ModelUnavailable
from engine.events import Verdict
from engine.hits import Hit
from engine.paths import PROJECT_ROOT
from engine.precedents import VERDICTS, context_window

logger = logging.getLogger(__name__)

DECIDED_BY = "examples"
NEIGHBOURS = 5  # nearest examples that vote
TEMPERATURE = 0.02  # a neighbour 0.02 less similar than the nearest weighs e^-1 as much (benchmarked)
MIN_EXAMPLES = 2  # labelled examples of the entry needed before any vote, at least one of each sense
MIN_STEP = 10  # leave-one-out votes a calibration step needs
MIN_LANGUAGE_POINTS = 30  # leave-one-out votes a language needs for a calibration of its own
MAX_CONFIDENCE = 0.9  # never surer than a non-ambiguous vocabulary term (engine.plan.VOCABULARY_CONFIDENCE)
MIN_CONFIDENCE = 0.8  # calibrated confidence below which the source declines (setting examples_min_confidence)
EMBEDDINGS_FILE = "embeddings.npz"


def shipped_examples() -> Path:
    """The curated examples shipped with unerase (override with UNERASE_SENSE_EXAMPLES)."""
    return Path(os.environ.get("UNERASE_SENSE_EXAMPLES") or PROJECT_ROOT / "sense-examples")


@dataclass(frozen=True)
class SenseExample:
    """One labelled use of an ambiguous term: the words around it and whether that use is hurtful."""

    language: str
    issue_id: str
    surface: str
    context: str
    verdict: str  # contentious, neutral
    ref: str  # where it comes from: "en/part-a.yaml#12" (curated) or "precedent:42"
    precedent_id: str = ""  # for a moderator verdict: its id, cited by the verdict


class ExampleProvider(Protocol):
    """More labelled examples than the curated ones: web.precedents gives every moderator verdict."""

    async def examples(self, hits: Sequence[Hit], language: str, site: str | None) -> list[SenseExample]:
        """The labelled examples of these hits' entries (issues) in `language`, of `site` when given."""
        ...


def load_examples(folder: Path | None = None) -> tuple[tuple[SenseExample, ...], dict[str, np.ndarray]]:
    """The curated examples of every `<lang>.yaml` in `folder`, and their precomputed vectors by text key
    (empty when the folder has no embeddings file, then they are embedded on first use)."""
    folder = folder or shipped_examples()
    examples: list[SenseExample] = []
    if not folder.is_dir():
        return (), {}
    for path in sorted(folder.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        language = str(data.get("language") or path.stem)
        for item in data.get("examples") or []:
            verdict = str(item["verdict"])
            if verdict not in VERDICTS:
                raise ValueError(f"{path}: verdict {verdict!r} is not one of {', '.join(VERDICTS)}")
            examples.append(
                SenseExample(
                    language, str(item["issue"]), str(item["surface"]), str(item["context"]), verdict, str(item["ref"])
                )
            )
    vectors: dict[str, np.ndarray] = {}
    stored = folder / EMBEDDINGS_FILE
    if stored.is_file():
        with np.load(stored) as data:
            for key, vector in zip(data["keys"], data["vectors"], strict=True):
                vectors[str(key)] = vector.astype(np.float32)
    return tuple(examples), vectors


# -- the vote ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vote:
    """The nearest examples' weighted vote for one hit."""

    p_contentious: float  # 0 (all weight neutral) to 1 (all weight contentious)
    neighbours: tuple[tuple[SenseExample, float], ...]  # (example, similarity), nearest first

    @property
    def verdict(self) -> str:
        return "contentious" if self.p_contentious >= 0.5 else "neutral"

    @property
    def margin(self) -> float:
        return abs(2 * self.p_contentious - 1)


def vote(
    query: np.ndarray,
    vectors: np.ndarray,
    examples: Sequence[SenseExample],
    k: int = NEIGHBOURS,
    temperature: float = TEMPERATURE,
) -> Vote:
    similarities = vectors @ query
    order = np.argsort(-similarities, kind="stable")[:k]
    top = similarities[order]
    weights = np.exp((top - top.max()) / temperature)
    labels = np.array([examples[i].verdict == "contentious" for i in order], dtype=np.float64)
    p = float((weights * labels).sum() / weights.sum())
    return Vote(p, tuple((examples[i], float(similarities[i])) for i in order))


@dataclass(frozen=True)
class Calibration:
    """Margin of a vote -> the share of leave-one-out votes with such a margin that were right.

    A step function from isotonic regression (pool adjacent violators: a larger margin is never less likely
    right), each step smoothed by Laplace's rule so a few lucky examples never give certainty."""

    edges: tuple[float, ...] = ()  # the lowest margin of each step
    values: tuple[float, ...] = ()
    points: int = 0  # leave-one-out votes measured
    # languages with enough votes of their own get their own steps: the model and the examples are not as
    # good in every language (measured: a vote of one margin is right less often in French than in English)
    languages: dict[str, Calibration] = field(default_factory=dict)

    def confidence(self, margin: float, agreeing: int = 0, voters: int = 0, language: str = "") -> float:
        own = self.languages.get(language)
        if own is not None:
            return own.confidence(margin, agreeing, voters)
        if not self.edges:
            # no measurement (no curated examples): the agreement alone, as the precedent rule does
            return (agreeing + 1) / (voters + 2)
        step = max(0, bisect.bisect_right(self.edges, margin + 1e-12) - 1)
        return self.values[step]

    @classmethod
    def fit(cls, margins: Sequence[float], correct: Sequence[bool]) -> Calibration:
        if not margins:
            return cls()
        order = sorted(range(len(margins)), key=lambda i: margins[i])
        blocks: list[list[float]] = []  # [lowest margin, right, total]
        for i in order:
            blocks.append([margins[i], float(correct[i]), 1.0])
            while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] >= blocks[-1][1] / blocks[-1][2]:
                low, right, total = blocks.pop()
                blocks[-1][1] += right
                blocks[-1][2] += total
                blocks[-1][0] = min(blocks[-1][0], low)
        # a step of a few votes says little: it joins the step below it
        merged: list[list[float]] = []
        for block in blocks:
            if merged and block[2] < MIN_STEP:
                merged[-1][1] += block[1]
                merged[-1][2] += block[2]
            else:
                merged.append(block)
        if len(merged) > 1 and merged[0][2] < MIN_STEP:
            first = merged.pop(0)
            merged[0] = [first[0], merged[0][1] + first[1], merged[0][2] + first[2]]
        edges = tuple([0.0] + [b[0] for b in merged[1:]])
        smoothed = [(b[1] + 1) / (b[2] + 2) for b in merged]
        values = tuple(float(v) for v in np.maximum.accumulate(smoothed))  # smoothing must not break the order
        return cls(edges, values, len(margins))


def contrasting(pool: Sequence[SenseExample]) -> bool:
    """Whether a vote among these examples can say anything: enough of them, and both senses present (with
    examples of one sense only, every vote would give that sense whatever the context)."""
    return len(pool) >= MIN_EXAMPLES and len({e.verdict for e in pool}) == len(VERDICTS)


def calibrate(examples: Sequence[SenseExample], vectors: np.ndarray, k: int = NEIGHBOURS) -> Calibration:
    """Leave-one-out over the examples: each is voted on by the others of its entry and language (never by
    another hit of its own sentence), and the calibration says how often a vote of each margin was right."""
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for n, example in enumerate(examples):
        groups[(example.language, example.issue_id)].append(n)
    margins: dict[str, list[float]] = defaultdict(list)
    correct: dict[str, list[bool]] = defaultdict(list)
    for members in groups.values():
        for n in members:
            others = [m for m in members if examples[m].ref != examples[n].ref]
            if not contrasting([examples[m] for m in others]):
                continue
            result = vote(vectors[n], vectors[others], [examples[m] for m in others], k)
            margins[examples[n].language].append(result.margin)
            correct[examples[n].language].append(result.verdict == examples[n].verdict)
    everything = Calibration.fit(
        [m for language in margins for m in margins[language]], [c for language in correct for c in correct[language]]
    )
    own = {
        language: Calibration.fit(margins[language], correct[language])
        for language in margins
        if len(margins[language]) >= MIN_LANGUAGE_POINTS
    }
    return dataclasses.replace(everything, languages=own)


# -- the source ---------------------------------------------------------------------------------------------------


@dataclass
class ExampleSource:
    """The Analyzer's example source (engine.precedents.PrecedentSource): the curated examples plus a provider's
    (moderator verdicts), voted on by embedding similarity. Declines, with one log line, without the model."""

    embedder: LazyEmbedder
    examples: Sequence[SenseExample] = ()
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # precomputed, by text key
    provider: ExampleProvider | None = None
    min_confidence: float = MIN_CONFIDENCE
    cache_path: Path | None = None
    k: int = NEIGHBOURS
    calibration: Calibration | None = None  # measured on the curated examples when first needed

    def __post_init__(self) -> None:
        self.cache = EmbeddingCache(self.embedder, self.cache_path)
        self.cache.seed(self.vectors)
        self._curated: dict[tuple[str, str], list[SenseExample]] = defaultdict(list)
        for example in self.examples:
            self._curated[(example.language, example.issue_id)].append(example)
        self._declined_logged = False
        digest = hashlib.sha256(f"{self.min_confidence}\x00{self.k}".encode())
        for example in sorted(self.examples, key=lambda e: (e.language, e.issue_id, e.context, e.verdict)):
            digest.update(
                "\x00".join(("", example.language, example.issue_id, example.context, example.verdict)).encode()
            )
        self.version = digest.hexdigest()[:12]  # what the curated examples decide: part of stored readings' keys

    def start(self) -> None:
        """Begins loading the model in the background (the web app calls it at start-up)."""
        self.embedder.start()

    def close(self) -> None:
        """Closes the embedding cache's file."""
        self.cache.close()

    async def decide(self, hits: Sequence[Hit], text: str, language: str, site: str | None) -> dict[str, Verdict]:
        extra = await self.provider.examples(hits, language, site) if self.provider is not None else []
        by_issue: dict[str, list[SenseExample]] = defaultdict(list)
        for example in extra:
            by_issue[example.issue_id].append(example)
        wanted = []
        for hit in hits:
            pool = [*self._curated.get((language, hit.issue.id), ()), *by_issue.get(hit.issue.id, ())]
            if contrasting(pool):
                wanted.append((hit, pool))
        if not wanted:
            return {}
        try:
            await asyncio.wrap_future(self.embedder.start())
        except ModelUnavailable:
            if not self._declined_logged:
                self._declined_logged = True
                logger.info("ambiguous hits are not decided from examples: no embedding model")
            return {}
        return await asyncio.to_thread(self._decide, wanted, text, language)

    def _calibration(self) -> Calibration:
        if self.calibration is None:
            vectors = self.cache.get([e.context for e in self.examples])
            self.calibration = calibrate(self.examples, vectors, self.k)
        return self.calibration

    def _decide(self, wanted: Sequence[tuple[Hit, list[SenseExample]]], text: str, language: str) -> dict[str, Verdict]:
        calibration = self._calibration()
        contexts = [context_window(text, hit.start, hit.end) for hit, _ in wanted]
        queries = self.cache.get(contexts)
        decided = {}
        for (hit, pool), query in zip(wanted, queries, strict=True):
            vectors = self.cache.get([e.context for e in pool])
            result = vote(query, vectors, pool, self.k)
            agreeing = [(e, s) for e, s in result.neighbours if e.verdict == result.verdict]
            confidence = min(
                MAX_CONFIDENCE,
                calibration.confidence(result.margin, len(agreeing), len(result.neighbours), language),
            )
            if confidence < self.min_confidence:
                continue
            decided[hit.id] = _verdict(hit, result, agreeing, confidence)
        return decided


def _verdict(hit: Hit, result: Vote, agreeing: list[tuple[SenseExample, float]], confidence: float) -> Verdict:
    sense = "in a hurtful sense" if result.verdict == "contentious" else "in a neutral sense"
    moderated = sum(1 for e, _ in agreeing if e.precedent_id)
    whose = (
        "moderators' earlier decisions"
        if moderated == len(agreeing)
        else "the curated examples"
        if moderated == 0
        else "curated examples and moderators' earlier decisions"
    )
    explanation = (
        f"“{hit.surface}” reads like the uses {sense} in {whose}: {len(agreeing)} of the "
        f"{len(result.neighbours)} closest labelled examples."
    )
    return Verdict(
        hit.id,
        result.verdict,  # type: ignore[arg-type]
        confidence,
        explanation,
        DECIDED_BY,
        precedents=tuple(e.precedent_id for e, _ in agreeing if e.precedent_id),
    )
