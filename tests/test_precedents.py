"""Precedents: moderator verdicts stored with their context, found by full-text search, and deciding new
ambiguous hits without a model (engine/precedents.py, web/precedents.py, the Analyzer's use of them).

Storage tests run on a real SQLite file and, when UNERASE_TEST_DATABASE_URL names a server, on PostgreSQL.
The analyses use the scripted backend (not a model) only to count the calls that reach it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlmodel import Session

from engine.analysis import Analyzer, AnalyzerConfig, BackendRouter
from engine.cache import MemoryCache
from engine.detector import Detector
from engine.events import AnalysisStarted, Decision, Done, ErrorEvent, Event, HitFound, Verdict
from engine.hits import Hit
from engine.precedents import Match, PrecedentRule, context_window, context_words, precedent_verdict, similarity
from engine.scope import Scope
from web import precedents
from web.db import make_engine
from web.models import AnalysisRecord, Precedent
from web.results import fold

from .support.databases import app_database
from .support.scripted_backend import ScriptedLLMBackend

RAIL = [
    "The storm crippled the rail network for three days.",
    "A strike crippled the rail network and the ports.",
    "The outage crippled the rail network overnight, said the operator.",
]
INSULTS = [
    "Shut up, you are crippled and useless, nobody wants you here.",
    "Look at him, crippled and useless, get out of our town.",
]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    with app_database(request.param, tmp_path) as engine:
        yield engine


def store(
    engine: Engine,
    contexts: Sequence[str],
    verdict: str,
    *,
    term_id: str = "t-crippled",
    surface: str = "crippled",
    site_key: str | None = None,
    analysis_id: str = "a-stored",
) -> list[Precedent]:
    with Session(engine) as session:
        if session.get(AnalysisRecord, analysis_id) is None:
            session.add(AnalysisRecord(id=analysis_id, text="(stored for the test)"))
            session.commit()
    rows = [
        Precedent(
            analysis_id=analysis_id,
            hit_id=f"h{n}",
            term_id=term_id,
            issue_id="en-cripple",
            language="en",
            site_key=site_key,
            surface=surface,
            context=context,
            verdict=verdict,
            moderator="mod",
        )
        for n, context in enumerate(contexts, start=1)
    ]
    precedents.record(engine, rows)
    with Session(engine) as session:  # the ids the database gave them
        return [session.get(Precedent, r.id) for r in rows if r.id is not None]  # type: ignore[misc]


# -- the context and the rule (pure) -----------------------------------------------------------------------------


def test_context_window_cuts_at_word_boundaries_and_keeps_the_hit() -> None:
    text = "alpha   beta gamma\ncrippled  delta epsilon zeta"
    start = text.index("crippled")
    # 10 characters reach into "beta" and "epsilon": both are left out, not cut
    assert context_window(text, start, start + 8, chars=10) == "gamma crippled delta"
    assert context_window(text, start, start + 8, chars=12) == "beta gamma crippled delta"
    assert context_window(text, start, start + 8, chars=1000) == "alpha beta gamma crippled delta epsilon zeta"
    assert context_window("crippled", 0, 8, chars=5) == "crippled"


def test_similarity_ignores_the_hit_short_and_function_words_case_and_accents() -> None:
    a = context_words("The Café crippled the network", "crippled")
    assert a == {"cafe", "network"}
    assert context_words("Die Brücke war für uns über Nacht gesperrt", "") == {"brucke", "war", "nacht", "gesperrt"}
    assert context_words("Ο σκύλος της γειτόνισσας είναι εδώ", "") == {"σκυλοσ", "γειτονισσασ", "εδω"}
    b = context_words("the cafe network is crippled", "crippled")
    assert similarity(a, b) == 1.0
    assert similarity(a, context_words("nothing shared here", "")) == 0.0
    assert similarity(a, frozenset()) == 0.0


def matches(*pairs: tuple[str, float]) -> list[Match]:
    return [Match(str(n), verdict, score) for n, (verdict, score) in enumerate(pairs, start=1)]


def test_rule_needs_enough_similar_agreeing_precedents() -> None:
    rule = PrecedentRule(min_support=3, min_similarity=0.1)
    assert rule.apply(matches(("neutral", 0.5), ("neutral", 0.5))) is None  # too few
    assert rule.apply(matches(("neutral", 0.5), ("neutral", 0.5), ("neutral", 0.05))) is None  # one not similar
    assert rule.apply(matches(("neutral", 0.5), ("neutral", 0.5), ("neutral", 0.5), ("contentious", 0.4))) is None
    agreed = rule.apply(matches(("neutral", 0.5), ("neutral", 0.3), ("neutral", 0.2), ("contentious", 0.01)))
    assert agreed is not None and agreed.verdict == "neutral"
    assert [m.precedent_id for m in agreed.agreeing] == ["1", "2", "3"] and agreed.dissenting == ()
    assert agreed.confidence == pytest.approx(0.8)


def test_a_looser_rule_tolerates_one_dissent() -> None:
    loose = PrecedentRule(min_support=3, min_similarity=0.1, min_agreement=0.75, max_dissent=1)
    four_to_one = matches(*[("contentious", 0.4)] * 4, ("neutral", 0.4))
    agreed = loose.apply(four_to_one)
    assert agreed is not None and agreed.verdict == "contentious" and len(agreed.dissenting) == 1
    assert agreed.confidence == pytest.approx(5 / 7)
    assert loose.apply(matches(*[("contentious", 0.4)] * 3, *[("neutral", 0.4)] * 2)) is None  # two dissent
    assert PrecedentRule().apply(four_to_one) is None  # the default rule wants them unanimous


def test_precedent_verdict_cites_and_explains(detector: Detector) -> None:
    (hit,) = detector.detect("the port was crippled", "en").hits
    verdict = precedent_verdict(hit, matches(("neutral", 0.5), ("neutral", 0.4), ("neutral", 0.3)))
    assert verdict is not None
    assert (verdict.status, verdict.decided_by, verdict.precedents) == ("neutral", "precedent", ("1", "2", "3"))
    assert (
        verdict.explanation
        == "Moderators judged “crippled” to be used in a neutral sense in 3 of 3 earlier posts worded like this one."
    )
    assert verdict.to_dict()["precedents"] == ["1", "2", "3"]
    assert "precedents" not in Verdict("h1", "neutral", 0.5, "", "model").to_dict()
    assert precedent_verdict(hit, matches(("neutral", 0.5))) is None


# -- storage and search (SQLite, PostgreSQL) ---------------------------------------------------------------------

HOSTILE = '"NEAR(a b)" OR * -crippled: AND NOT "unbalanced ^col:umn \\ \'quote\' (paren & | ! <-> network'


def test_search_text_full_of_query_syntax_is_read_as_words(database: Engine) -> None:
    stored = store(database, [HOSTILE, "nothing in common at all"], "neutral")
    found = precedents.similar(database, "t-crippled", "en", HOSTILE, surface="crippled")
    assert [p.id for p, _ in found] == [stored[0].id]
    assert found[0][1] == 1.0
    near = precedents.similar(database, "t-crippled", "en", 'the NEAR "network" OR *', surface="crippled")
    assert [p.id for p, _ in near] == [stored[0].id]  # shares "near" and "network"
    assert precedents.similar(database, "t-crippled", "en", '" * - : ( )', surface="crippled") == []


def test_similar_ranks_the_closer_context_first(database: Engine) -> None:
    far, close = store(
        database, ["the crippled rail network", "the storm crippled the rail network for three days"], "neutral"
    )
    found = precedents.similar(
        database, "t-crippled", "en", "a storm crippled the rail network for days", surface="crippled"
    )
    assert [p.id for p, _ in found] == [close.id, far.id]
    assert found[0][1] > found[1][1] > 0


def test_similar_keeps_to_the_term_the_site_and_other_analyses(database: Engine) -> None:
    (everywhere,) = store(database, ["the rail network"], "neutral")
    (on_site,) = store(database, ["the rail network"], "neutral", site_key="forum", analysis_id="a-site")
    store(database, ["the rail network"], "neutral", term_id="t-other", analysis_id="a-other")
    query = "the rail network today"
    assert {p.id for p, _ in precedents.similar(database, "t-crippled", "en", query)} == {everywhere.id, on_site.id}
    assert [p.id for p, _ in precedents.similar(database, "t-crippled", "en", query, "forum")] == [on_site.id]
    assert precedents.similar(database, "t-crippled", "fr", query) == []
    kept = precedents.similar(database, "t-crippled", "en", query, exclude_analysis="a-stored")
    assert [p.id for p, _ in kept] == [on_site.id]


def test_replace_removes_an_items_earlier_examples(database: Engine) -> None:
    store(database, ["the rail network was crippled"], "contentious")
    newer = Precedent(
        analysis_id="a-stored",
        hit_id="h1",
        term_id="t-crippled",
        issue_id="en-cripple",
        language="en",
        surface="crippled",
        context="the rail network was crippled",
        verdict="neutral",
        moderator="other",
    )
    precedents.replace(database, "a-stored", [newer])
    found = precedents.similar(database, "t-crippled", "en", "the rail network", surface="crippled")
    assert [(p.verdict, p.moderator) for p, _ in found] == [("neutral", "other")]


def test_the_index_is_created_once_and_covers_rows_written_before_it(tmp_path: Path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")
    with engine.begin() as connection:  # a database from before the index: table and rows, no FTS
        for name in ("insert", "delete", "update"):
            connection.execute(text(f"DROP TRIGGER {precedents.FTS_TABLE}_{name}"))
        connection.execute(text(f"DROP TABLE {precedents.FTS_TABLE}"))
    (old,) = store(engine, ["the rail network"], "neutral")
    engine.dispose()
    again = make_engine(f"sqlite:///{tmp_path / 'old.sqlite'}")  # creates the index and fills it
    precedents.ensure_index(again)  # and doing it again changes nothing
    assert [p.id for p, _ in precedents.similar(again, "t-crippled", "en", "rail network")] == [old.id]
    again.dispose()


def test_from_document_builds_rows_from_an_analysis_document(detector: Detector) -> None:
    text = "Snow crippled the rail network this morning."
    events = [{"type": e.type, "data": e.to_dict()} for e in detector_events(detector, text)]
    document = {"id": "a1", "text": text, **fold(events)}
    (row,) = precedents.from_document(document, {"h1": "neutral"}, "mod", "forum")
    assert (row.analysis_id, row.hit_id, row.term_id, row.issue_id) == ("a1", "h1", "en-cripple#crippled", "en-cripple")
    assert (row.language, row.site_key, row.surface, row.verdict, row.moderator) == (
        "en",
        "forum",
        "crippled",
        "neutral",
        "mod",
    )
    assert row.context == text
    with pytest.raises(
        precedents.InvalidPrecedent, match="verdict 'maybe' for hit 'h1' is not known; accepted: contentious, neutral"
    ):
        precedents.from_document(document, {"h1": "maybe"}, "mod", None)
    with pytest.raises(precedents.InvalidPrecedent, match="hit 'h9' is not in analysis a1; its hits: h1"):
        precedents.from_document(document, {"h9": "neutral"}, "mod", None)


def detector_events(detector: Detector, text: str) -> list[Event]:
    detection = detector.detect(text, "en")
    started = AnalysisStarted("a1", "en", False, 1.0, "vocabulary-only", "v", "p", (), len(detection.hits))
    return [started, *(HitFound(h) for h in detection.hits)]


# -- the Analyzer deciding from precedents -----------------------------------------------------------------------

MIXED = "Snow crippled the rail network this morning, you cripple."


def analyzer(detector: Detector, backend: ScriptedLLMBackend | None, source: object) -> Analyzer:
    return Analyzer(
        detector,
        BackendRouter(backend),
        cache=MemoryCache(),
        config=AnalyzerConfig(),
        precedents=source,  # type: ignore[arg-type]
    )


def verdicts_of(events: Sequence[Event]) -> dict[str, Verdict]:
    return {e.hit_id: e for e in events if isinstance(e, Verdict)}


async def test_a_hit_decided_by_precedent_costs_no_model_call(database: Engine, detector: Detector) -> None:
    stored = store(database, RAIL, "neutral", term_id="en-cripple#crippled")
    backend = ScriptedLLMBackend()
    events = await analyzer(detector, backend, precedents.DatabasePrecedents(database)).collect(MIXED, "en")
    kinds = [e.type for e in events]
    assert kinds.index("verdict") > max(i for i, k in enumerate(kinds) if k == "hit")
    assert kinds[-1] == "done" and "error" not in kinds
    verdicts = verdicts_of(events)
    decided = verdicts["h1"]
    assert (decided.status, decided.decided_by) == ("neutral", "precedent")
    assert sorted(decided.precedents) == sorted(str(p.id) for p in stored)  # all three agreed, all cited
    assert verdicts["h2"].decided_by == "scripted:test"  # no precedent for "cripple": the model was asked
    # one targeting call and one disambiguation call, for "cripple" only
    assert sorted(backend.stages) == ["disambiguation", "targeting"]


async def test_precedents_decide_in_vocabulary_only_mode(database: Engine, detector: Detector) -> None:
    text = "Snow crippled the rail network this morning."
    alone = await analyzer(detector, None, None).collect(text, "en")
    assert verdicts_of(alone)["h1"].status == "undetermined"
    store(database, RAIL, "neutral", term_id="en-cripple#crippled")
    events = await analyzer(detector, None, precedents.DatabasePrecedents(database)).collect(text, "en")
    verdict = verdicts_of(events)["h1"]
    assert (verdict.status, verdict.decided_by, len(verdict.precedents)) == ("neutral", "precedent", 3)
    done = events[-1]
    assert isinstance(done, Done) and done.llm_calls == 0
    (decision,) = [e for e in events if isinstance(e, Decision)]
    assert decision.label == "not_flagged"


async def test_disagreeing_precedents_leave_the_hit_to_the_model(database: Engine, detector: Detector) -> None:
    store(database, RAIL[:2], "neutral", term_id="en-cripple#crippled")
    store(database, [RAIL[2]], "contentious", term_id="en-cripple#crippled", analysis_id="a-other")
    backend = ScriptedLLMBackend()
    source = precedents.DatabasePrecedents(database)
    events = await analyzer(detector, backend, source).collect("Snow crippled the rail network.", "en")
    assert verdicts_of(events)["h1"].decided_by == "scripted:test"  # 2 against 1: not unanimous
    assert sorted(backend.stages) == ["disambiguation", "targeting"]


async def test_a_sites_analyses_use_that_sites_precedents(database: Engine, detector: Detector) -> None:
    store(database, RAIL, "neutral", term_id="en-cripple#crippled", site_key="forum")
    source = precedents.DatabasePrecedents(database)

    async def decided_by(site: str) -> str:
        text = "Snow crippled the rail network."
        events = [e async for e in analyzer(detector, None, source).analyze(text, "en", scope=Scope(site=site))]
        return verdicts_of(events)["h1"].decided_by

    assert await decided_by("forum") == "precedent"
    assert await decided_by("elsewhere") == "vocabulary"  # another site's moderators decided nothing yet


class BrokenSource:
    async def decide(self, hits: Sequence[Hit], text: str, language: str, site: str | None) -> dict[str, Verdict]:
        raise RuntimeError("database is locked")


@pytest.mark.parametrize("with_model", [True, False])
async def test_a_failing_source_gives_an_error_and_the_analysis_goes_on(detector: Detector, with_model: bool) -> None:
    backend = ScriptedLLMBackend() if with_model else None
    events = await analyzer(detector, backend, BrokenSource()).collect(MIXED, "en")
    (error,) = [e for e in events if isinstance(e, ErrorEvent)]
    assert (error.stage, error.code) == ("precedent", "precedent-failed") and "database is locked" in error.message
    verdicts = verdicts_of(events)
    assert set(verdicts) == {"h1", "h2"}
    expected = {"scripted:test"} if with_model else {"vocabulary", "sense-cues"}
    assert {v.decided_by for v in verdicts.values()} <= expected
    assert [e.type for e in events][-2:] == ["decision", "done"]
