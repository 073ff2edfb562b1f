"""Moderator verdicts kept as precedents: stored per hit with the words around it, found again by full-text search.

Writing: `from_document` turns a moderator's per-hit verdicts on an analysis into `Precedent` rows; `record`
stores them, `replace` stores them instead of an item's earlier ones. Reading: `similar` finds the earlier
verdicts on the same term whose contexts share words with a new one, `similar_decisions` does it for every hit
of an analysis (the moderator's item page), and `DatabasePrecedents` lets the Analyzer decide ambiguous hits
from them (engine.precedents holds the rule).

Search: SQLite uses an FTS5 table over `precedent.context` (external content, kept in step by triggers);
PostgreSQL a GIN index on `to_tsvector('simple', context)`. The database finds and ranks candidates (bm25 /
ts_rank); the score returned is the word overlap of engine.precedents.similarity, computed the same way on both,
so one minimum similarity holds everywhere.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine
from sqlmodel import Session, col, select

from engine.errors import UneraseError
from engine.events import Verdict
from engine.hits import Hit
from engine.precedents import (
    VERDICTS,
    Match,
    PrecedentRule,
    context_window,
    context_words,
    precedent_verdict,
    similarity,
)
from engine.sense_examples import SenseExample
from web.models import Precedent

FTS_TABLE = "precedent_fts"
PG_INDEX = "ix_precedent_context_fts"
MAX_QUERY_WORDS = 48  # more than a default context has (about 240 characters): bounds the query for longer ones
CANDIDATES = 4  # candidates fetched per result wanted, re-ranked by word overlap
TERMS_SECONDS = 5.0  # precedents another process records are used after at most this long


class InvalidPrecedent(UneraseError):
    status = 422
    code = "invalid-precedent"


# -- the index ------------------------------------------------------------------------------------------------


def ensure_index(engine: Engine) -> None:
    """Creates the full-text index if it is missing (idempotent; web.db.create_tables retries it on a race)."""
    dialect = engine.dialect.name
    with engine.begin() as connection:
        if dialect == "sqlite":
            _ensure_sqlite(connection)
        elif dialect == "postgresql":
            connection.execute(
                text(f"CREATE INDEX IF NOT EXISTS {PG_INDEX} ON precedent USING GIN (to_tsvector('simple', context))")
            )
        # other databases: `similar` compares the term's precedents in Python instead


def _ensure_sqlite(connection: Connection) -> None:
    exists = connection.execute(
        text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"), {"name": FTS_TABLE}
    ).first()
    connection.execute(
        text(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {FTS_TABLE} USING fts5(context, content='precedent', "
            "content_rowid='id', tokenize='unicode61 remove_diacritics 2')"
        )
    )
    # the triggers keep the index in step with every writer of the table, not only with `record`
    connection.execute(
        text(
            f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_insert AFTER INSERT ON precedent BEGIN "
            f"INSERT INTO {FTS_TABLE}(rowid, context) VALUES (new.id, new.context); END"
        )
    )
    connection.execute(
        text(
            f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_delete AFTER DELETE ON precedent BEGIN "
            f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, context) VALUES ('delete', old.id, old.context); END"
        )
    )
    connection.execute(
        text(
            f"CREATE TRIGGER IF NOT EXISTS {FTS_TABLE}_update AFTER UPDATE OF context ON precedent BEGIN "
            f"INSERT INTO {FTS_TABLE}({FTS_TABLE}, rowid, context) VALUES ('delete', old.id, old.context); "
            f"INSERT INTO {FTS_TABLE}(rowid, context) VALUES (new.id, new.context); END"
        )
    )
    if exists is None:
        # a database from before the index: the rows already there are indexed once
        connection.execute(text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')"))


# -- writing ------------------------------------------------------------------------------------------------------


def from_document(
    document: dict[str, Any], verdicts: dict[str, str], moderator: str, site_key: str | None
) -> list[Precedent]:
    """One `Precedent` per hit a moderator gave a verdict on, from an analysis document (web.results shape)."""
    hits = {hit["id"]: hit for hit in document.get("hits", [])}
    rows = []
    for hit_id, verdict in verdicts.items():
        if verdict not in VERDICTS:
            raise InvalidPrecedent(
                f"verdict '{verdict}' for hit '{hit_id}' is not known; accepted: {', '.join(VERDICTS)}"
            )
        hit = hits.get(hit_id)
        if hit is None:
            known = ", ".join(hits) or "none"
            raise InvalidPrecedent(f"hit '{hit_id}' is not in analysis {document.get('id')}; its hits: {known}")
        rows.append(
            Precedent(
                analysis_id=document["id"],
                hit_id=hit_id,
                term_id=hit["term_id"],
                issue_id=hit["issue_id"],
                language=hit.get("language") or document.get("language") or "",
                site_key=site_key,
                surface=hit["surface"],
                context=context_window(document["text"], hit["start"], hit["end"]),
                verdict=verdict,
                moderator=moderator,
            )
        )
    return rows


def record(engine: Engine, examples: Sequence[Precedent]) -> None:
    """Stores the examples in one transaction (the SQLite index follows through its triggers)."""
    if not examples:
        return
    with Session(engine, expire_on_commit=False) as session:  # the rows stay readable, with their ids
        session.add_all(examples)
        session.commit()
    _changed()


def replace(engine: Engine, analysis_id: str, examples: Sequence[Precedent]) -> None:
    """Stores an item's examples in place of those an earlier decision on it left (one transaction): a
    moderator who changes their mind leaves one set of verdicts, not two that contradict each other."""
    with Session(engine, expire_on_commit=False) as session:
        for old in session.exec(select(Precedent).where(Precedent.analysis_id == analysis_id)):
            session.delete(old)
        session.flush()
        session.add_all(examples)
        session.commit()
    _changed()


_generation = 0  # counts this process's writes, so its sources re-read the known terms at once


def _changed() -> None:
    global _generation
    _generation += 1


# -- reading ------------------------------------------------------------------------------------------------------


def _query_words(context: str, surface: str) -> list[str]:
    return sorted(context_words(context, surface))[:MAX_QUERY_WORDS]


def _fts5_query(words: Sequence[str]) -> str:
    # every word as a quoted string, so nothing in user text (NEAR, OR, -, *, :, quotes) is read as syntax
    return " OR ".join('"' + w.replace('"', '""') + '"' for w in words)


def _tsquery(words: Sequence[str]) -> str:
    # quoted lexemes joined by |: to_tsquery reads no operator inside single quotes
    return " | ".join("'" + w.replace("\\", "\\\\").replace("'", "''") + "'" for w in words)


def _ranked_ids(
    connection: Connection,
    words: Sequence[str],
    term_id: str,
    language: str,
    site_key: str | None,
    exclude_analysis: str | None,
    limit: int,
    issue_id: str | None,
) -> list[int]:
    """Ids of the term's precedents sharing at least one word with the query, best first by the database's rank."""
    params: dict[str, Any] = {"language": language, "limit": limit}
    if issue_id is not None:
        where = "p.issue_id = :issue_id AND p.language = :language"
        params["issue_id"] = issue_id
    else:
        where = "p.term_id = :term_id AND p.language = :language"
        params["term_id"] = term_id
    if site_key is not None:
        where += " AND p.site_key = :site_key"
        params["site_key"] = site_key
    if exclude_analysis is not None:
        where += " AND p.analysis_id != :exclude"
        params["exclude"] = exclude_analysis
    dialect = connection.dialect.name
    if dialect == "sqlite":
        params["query"] = _fts5_query(words)
        sql = (
            f"SELECT p.id FROM {FTS_TABLE} JOIN precedent p ON p.id = {FTS_TABLE}.rowid "
            f"WHERE {FTS_TABLE} MATCH :query AND {where} ORDER BY bm25({FTS_TABLE}), p.id LIMIT :limit"
        )
    elif dialect == "postgresql":
        params["query"] = _tsquery(words)
        sql = (
            "SELECT p.id FROM precedent p, to_tsquery('simple', :query) q "
            f"WHERE to_tsvector('simple', p.context) @@ q AND {where} "
            "ORDER BY ts_rank(to_tsvector('simple', p.context), q) DESC, p.id LIMIT :limit"
        )
    else:
        sql = f"SELECT p.id FROM precedent p WHERE {where} ORDER BY p.id DESC LIMIT 1000"
    return [row[0] for row in connection.execute(text(sql), params)]


def similar(
    engine: Engine,
    term_id: str,
    language: str,
    context: str,
    site_key: str | None = None,
    limit: int = 5,
    *,
    surface: str = "",
    exclude_analysis: str | None = None,
    issue_id: str | None = None,
) -> list[tuple[Precedent, float]]:
    """The earlier verdicts on `term_id` whose contexts are most like `context`, with their similarity (0-1),
    most similar first; only those of `site_key` when given, else of every site. `surface` (the hit's own
    words) is left out of the comparison; `exclude_analysis` leaves out an analysis's own precedents. With
    `issue_id`, verdicts on every term of that issue count (its inflections, spellings and synonyms)."""
    words = _query_words(context, surface)
    if not words:
        return []
    wanted = context_words(context, surface)
    with Session(engine) as session:
        connection = session.connection()
        ids = _ranked_ids(
            connection, words, term_id, language, site_key, exclude_analysis, limit * CANDIDATES, issue_id
        )
        if not ids:
            return []
        rows = {p.id: p for p in session.exec(select(Precedent).where(col(Precedent.id).in_(ids)))}
    order = {pid: n for n, pid in enumerate(ids)}
    scored = [(p, similarity(wanted, context_words(p.context, p.surface))) for p in rows.values()]
    # the overlap decides; the database's rank breaks ties (it weighs rare shared words higher)
    scored.sort(key=lambda pair: (-pair[1], order.get(pair[0].id or 0, 0)))
    return [(p, score) for p, score in scored if score > 0][:limit]


def similar_decisions(
    engine: Engine, document: dict[str, Any], site_key: str | None, limit: int = 5, *, exclude: str | None = None
) -> dict[str, list[tuple[Precedent, float]]]:
    """For each hit of an analysis document, the most similar earlier moderator verdicts on its term: what the
    moderator's item page shows beside each hit. The precedents of analysis `exclude` (by default the
    document's own) are left out, so an item never lists its own verdicts as past decisions."""
    found: dict[str, list[tuple[Precedent, float]]] = {}
    for hit in document.get("hits", []):
        context = context_window(document["text"], hit["start"], hit["end"])
        language = hit.get("language") or document.get("language") or ""
        found[hit["id"]] = similar(
            engine,
            hit["term_id"],
            language,
            context,
            site_key,
            limit,
            surface=hit["surface"],
            exclude_analysis=exclude or document.get("id"),
        )
    return found


class DatabasePrecedents:
    """The Analyzer's precedent source (engine.precedents.PrecedentSource) over the `precedent` table."""

    def __init__(self, engine: Engine, rule: PrecedentRule | None = None, limit: int = 5) -> None:
        self.engine = engine
        self.rule = rule or PrecedentRule()
        self.limit = limit
        # the terms that have any precedent, re-read every TERMS_SECONDS: most analyses have none of them, and
        # then ask the database nothing (one thread hop and query per analysis would cost the JSON API ~10%)
        self._terms: frozenset[str] = frozenset()
        self._terms_read = -math.inf
        self._generation = -1

    def _known_terms(self) -> frozenset[str]:
        with self.engine.connect() as connection:
            rows = connection.execute(text("SELECT DISTINCT term_id FROM precedent"))
            return frozenset(row[0] for row in rows)

    async def decide(self, hits: Sequence[Hit], text: str, language: str, site: str | None) -> dict[str, Verdict]:
        if self._generation != _generation or time.monotonic() - self._terms_read > TERMS_SECONDS:
            self._generation = _generation
            self._terms = await asyncio.to_thread(self._known_terms)
            self._terms_read = time.monotonic()
        hits = [hit for hit in hits if hit.term.id in self._terms]
        if not hits:
            return {}
        return await asyncio.to_thread(self._decide, hits, text, language, site)

    def _decide(self, hits: Sequence[Hit], text: str, language: str, site: str | None) -> dict[str, Verdict]:
        decided = {}
        for hit in hits:
            context = context_window(text, hit.start, hit.end)
            found = similar(self.engine, hit.term.id, language, context, site, self.limit, surface=hit.surface)
            matches = [Match(str(p.id), p.verdict, score) for p, score in found]
            verdict = precedent_verdict(hit, matches, self.rule)
            if verdict is not None:
                decided[hit.id] = verdict
        return decided


class DatabaseExamples:
    """Every moderator verdict as a labelled example for the example source (engine.sense_examples), compared
    by embeddings instead of shared words: the precedents of the hits' vocabulary entries (issues), newest first,
    of the analysis's site when it has one, else of every site."""

    def __init__(self, engine: Engine, limit: int = 200) -> None:
        self.engine = engine
        self.limit = limit  # per entry: the newest decisions, so a long history costs a bounded vote
        self._issues: frozenset[tuple[str, str]] = frozenset()
        self._issues_read = -math.inf
        self._generation = -1

    def _known_issues(self) -> frozenset[tuple[str, str]]:
        with self.engine.connect() as connection:
            rows = connection.execute(text("SELECT DISTINCT issue_id, language FROM precedent"))
            return frozenset((row[0], row[1]) for row in rows)

    async def examples(self, hits: Sequence[Hit], language: str, site: str | None) -> list[SenseExample]:
        if self._generation != _generation or time.monotonic() - self._issues_read > TERMS_SECONDS:
            self._generation = _generation
            self._issues = await asyncio.to_thread(self._known_issues)
            self._issues_read = time.monotonic()
        issues = sorted({hit.issue.id for hit in hits if (hit.issue.id, language) in self._issues})
        if not issues:
            return []
        return await asyncio.to_thread(self._read, issues, language, site)

    def _read(self, issues: Sequence[str], language: str, site: str | None) -> list[SenseExample]:
        found: list[SenseExample] = []
        with Session(self.engine) as session:
            for issue in issues:
                query = select(Precedent).where(Precedent.issue_id == issue, Precedent.language == language)
                if site is not None:
                    query = query.where(Precedent.site_key == site)
                rows = session.exec(query.order_by(col(Precedent.id).desc()).limit(self.limit))
                found.extend(
                    SenseExample(
                        p.language, p.issue_id, p.surface, p.context, p.verdict, f"precedent:{p.id}", str(p.id)
                    )
                    for p in rows
                    if p.verdict in VERDICTS
                )
        return found
