"""Reads of the full-text index, one dialect at a time: document frequencies and the
candidates a question's terms find in a topic (or in every paper), best first. Terms are
the question's folded words (`Question.terms`); each engine stems them as it stemmed the
papers (FTS5 `porter`, PostgreSQL `english`).

Work is bounded by what the index can find cheaply. Terms are taken rarest first while
the papers they match add up to at most `budget` (always at least the rarest one): those
*generate* the candidates, ranked by the engine (FTS5 `bm25()`, PostgreSQL `ts_rank`)
and cut at `limit`; the common words left out still count when `rank.py` scores the
candidates. When even the rarest term is common, every term must match (AND), so the
candidates are the papers that contain all of them.

On PostgreSQL, sequential scans are switched off for these statements: the planner
would otherwise read (and decompress) every tsvector for a common word, where the GIN
index answers from its posting lists.

Statements are assembled from fixed fragments and numbered placeholders only (hence the
S608 waivers below); every value a user typed is a bound parameter.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.columns import UTCDateTime

BUDGET = 5000  # papers the generating terms may match together
WEIGHTS = (2.5, 1.0, 2.0, 0.75)  # title, abstract, authors, affiliations
_PG_WEIGHTS = "{0.3,0.8,0.4,1.0}"  # ts_rank's order: D (affiliations), C, B, A (title)


@dataclass(frozen=True, slots=True)
class Scope:
    """Where to look: one topic's papers (or all), optionally within a time window."""

    topic_id: int | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class Candidates:
    ids: tuple[str, ...]  # best first, by the engine's own rank
    total: int  # papers in scope the generating terms match
    generators: tuple[str, ...]
    conjunctive: bool


def choose_generators(
    terms: Sequence[str], dfs: dict[str, int], budget: int = BUDGET
) -> tuple[tuple[str, ...], bool]:
    """(terms that generate candidates, whether all must match); pure."""
    found = sorted((t for t in terms if dfs.get(t, 0) > 0), key=lambda t: (dfs[t], t))
    if not found:
        return (), False
    if dfs[found[0]] > budget and len(found) > 1:
        return tuple(found), True
    chosen: list[str] = []
    total = 0
    for term in found:
        if chosen and total + dfs[term] > budget:
            break
        chosen.append(term)
        total += dfs[term]
    return tuple(chosen), False


def dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _pg_query(terms: Sequence[str], conjunctive: bool) -> tuple[str, dict[str, str]]:
    op = " && " if conjunctive else " || "
    sql = op.join(f"plainto_tsquery('english', :t{i})" for i in range(len(terms)))
    return f"({sql})", {f"t{i}": t for i, t in enumerate(terms)}


async def _no_seqscan(session: AsyncSession, on: bool) -> None:
    # SET LOCAL lasts until the transaction ends; put the default back for the caller
    # (after a failed statement the transaction is aborted anyway, so no finally).
    await session.execute(text(f"SET LOCAL enable_seqscan = {'off' if on else 'DEFAULT'}"))


async def corpus_size(session: AsyncSession) -> int:
    """How many papers the index holds (N of the IDF)."""
    return int((await session.execute(text("SELECT count(*) FROM paper_search"))).scalar_one())


async def doc_freqs(session: AsyncSession, terms: Sequence[str]) -> dict[str, int]:
    """Papers matching each term (with the engine's own stemming), in one round trip."""
    if not terms:
        return {}
    if dialect(session) == "postgresql":
        parts = ", ".join(
            f"(SELECT count(*) FROM paper_search WHERE document @@ "  # noqa: S608
            f"plainto_tsquery('english', :t{i}))"
            for i in range(len(terms))
        )
        await _no_seqscan(session, True)
        row = (await session.execute(text(f"SELECT {parts}"), _params(terms))).one()
        await _no_seqscan(session, False)
    else:
        parts = ", ".join(
            f"(SELECT count(*) FROM paper_fts WHERE paper_fts MATCH :t{i})"  # noqa: S608
            for i in range(len(terms))
        )
        phrases = [_fts_phrase(t) for t in terms]
        row = (await session.execute(text(f"SELECT {parts}"), _params(phrases))).one()
    return {t: int(n) for t, n in zip(terms, row, strict=True)}


def _params(values: Sequence[str]) -> dict[str, str]:
    return {f"t{i}": v for i, v in enumerate(values)}


def _filters(scope: Scope, joiner: str = "JOIN") -> tuple[str, str, dict[str, object]]:
    join = (
        f" {joiner} paper_topic t ON t.paper_id = s.paper_id AND t.topic_id = :topic_id"
        if scope.topic_id is not None
        else ""
    )
    where = ""
    params: dict[str, object] = {}
    if scope.topic_id is not None:
        params["topic_id"] = scope.topic_id
    if scope.since is not None:
        where += " AND s.published >= :since"
        params["since"] = scope.since
    if scope.until is not None:
        where += " AND s.published < :until"
        params["until"] = scope.until
    return join, where, params


def _typed(sql: str, scope: Scope) -> object:
    statement = text(sql)
    for name, value in (("since", scope.since), ("until", scope.until)):
        if value is not None:
            statement = statement.bindparams(bindparam(name, type_=UTCDateTime()))
    return statement


async def find_candidates(
    session: AsyncSession,
    *,
    generators: Sequence[str],
    conjunctive: bool,
    scope: Scope,
    limit: int,
) -> Candidates:
    """The best `limit` papers in `scope` by the engine's rank, and how many match."""
    if not generators:
        return Candidates((), 0, (), conjunctive)
    postgres = dialect(session) == "postgresql"
    # SQLite: CROSS JOIN keeps the FTS scan outermost; otherwise the planner may walk the
    # topic's papers and run the whole MATCH again for each of them.
    join, where, params = _filters(scope, "JOIN" if postgres else "CROSS JOIN")
    params["limit"] = limit
    if postgres:
        tsquery, terms = _pg_query(generators, conjunctive)
        sql = (
            f"SELECT s.paper_id, count(*) OVER () FROM (SELECT {tsquery} AS q) AS query "  # noqa: S608
            f"CROSS JOIN paper_search s{join} WHERE s.document @@ query.q{where} "
            f"ORDER BY ts_rank('{_PG_WEIGHTS}', s.document, query.q, 1) DESC, s.paper_id "
            "LIMIT :limit"
        )
        await _no_seqscan(session, True)
        rows = (await session.execute(_typed(sql, scope), params | terms)).all()  # type: ignore[call-overload]
        await _no_seqscan(session, False)
    else:
        op = " AND " if conjunctive else " OR "
        params["match"] = op.join(_fts_phrase(t) for t in generators)
        weights = ", ".join(str(w) for w in WEIGHTS)
        # bm25() only works inside the FTS scan: rank there, count and cut outside.
        sql = (
            "SELECT paper_id, count(*) OVER () FROM ("  # noqa: S608
            f"SELECT s.paper_id AS paper_id, bm25(paper_fts, {weights}) AS rank FROM paper_fts "
            f"CROSS JOIN paper_search s ON s.doc = paper_fts.rowid{join} "
            f"WHERE paper_fts MATCH :match{where}) "
            "ORDER BY rank, paper_id LIMIT :limit"
        )
        rows = (await session.execute(_typed(sql, scope), params)).all()  # type: ignore[call-overload]
    total = int(rows[0][1]) if rows else 0
    return Candidates(tuple(r[0] for r in rows), total, tuple(generators), conjunctive)


class TermStats:
    """Document frequencies and the corpus size, kept for `ttl` seconds.

    They move only when a poll lands, and a common word costs the engine a walk over a
    long posting list: caching them keeps a question's cost near its rare words'.
    """

    def __init__(self, ttl: float = 600.0, max_terms: int = 20_000) -> None:
        self.ttl = ttl
        self._max = max_terms
        self._dfs: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self._size: tuple[float, int] | None = None

    def clear(self) -> None:
        self._dfs.clear()
        self._size = None

    async def size(self, session: AsyncSession) -> int:
        now = time.monotonic()
        if self._size is None or now - self._size[0] >= self.ttl:
            self._size = (now, await corpus_size(session))
        return self._size[1]

    async def freqs(self, session: AsyncSession, terms: Sequence[str]) -> dict[str, int]:
        now = time.monotonic()
        known = {t: hit[1] for t in terms if (hit := self._dfs.get(t)) and now - hit[0] < self.ttl}
        missing = [t for t in terms if t not in known]
        if missing:
            fresh = await doc_freqs(session, missing)
            for term, df in fresh.items():
                self._dfs[term] = (now, df)
                self._dfs.move_to_end(term)
            while len(self._dfs) > self._max:
                self._dfs.popitem(last=False)
            known |= fresh
        return known
