"""The full-text index's one writer: `paper_search` (and, on SQLite, `paper_fts`), and
its work queue, `paper_index_queue`.

Ingest does not index: in its transaction it only queues the ids of the papers it stored
or changed (`queue_papers`, a few microseconds a paper instead of the ~100 us the engines'
tokenising costs). The indexer (`index_queued`, run by bot/service/indexer.py after each
poll) takes a batch from the queue, writes its index entries and deletes its queue rows
in one transaction: a crash between batches re-indexes nothing twice and misses nothing,
and a paper changed again after it was read is queued again, so it is indexed again.
On PostgreSQL the batch is taken `FOR UPDATE SKIP LOCKED` and ingest re-stamps a queued
row with `ON CONFLICT DO UPDATE` (which locks it): an indexer never deletes a row that an
ingest still to commit has re-queued. On SQLite writers are serialised (BEGIN IMMEDIATE).

The engines do the work in C: SQLite FTS5 (`porter unicode61`) and PostgreSQL
`to_tsvector('english', …)` with a GIN index. Both receive the same text: as stored when
it is ASCII (both fold case, and LaTeX commands are words to them), accents folded
otherwise (PostgreSQL has no unaccent without an extension); the authors' names and
their affiliations are one field each. Stemming in Python instead would make the
engines' tokens identical, but costs more per paper than the engines' own stemmers.

SQLite: `paper_search(doc INTEGER PRIMARY KEY, paper_id UNIQUE, published)` maps a paper
to the FTS5 rowid (a rowid of `paper` itself could change under VACUUM), and
`paper_fts(title, abstract, authors, affiliations)` holds the text; a trigger deletes the
FTS row with its mapping. PostgreSQL: `paper_search(paper_id PRIMARY KEY, published,
document tsvector)`, fields weighted A (title), B (abstract), C (authors), D
(affiliations). The migration 0005_fulltext creates both and backfilled them with
`search_row`; 0010_ingest_index_queue creates the queue.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any, TypedDict, cast

from sqlalchemy import func, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.matching.textnorm import fold
from bot.store.columns import sqlite_time
from bot.store.models import PaperIndexQueue
from bot.timeutil import as_utc

_CHUNK = 500
_ENCODE = json.JSONEncoder().encode
_DECODE = json.JSONDecoder().decode
QUEUE = PaperIndexQueue.__table__  # type: ignore[attr-defined]


class SearchRow(TypedDict):
    """One paper's searchable text, as both engines index it."""

    paper_id: str
    published: Any  # aware datetime
    title: str
    abstract: str
    authors: str
    affiliations: str


def plain(text: str) -> str:
    """`text` as the engines index it: unchanged when ASCII, accents folded otherwise."""
    return text if text.isascii() else fold(text)


@lru_cache(maxsize=1 << 16)
def _plain_short(text: str) -> str:
    """`plain` of a name or an affiliation: the same ones recur on many papers."""
    return plain(text)


def search_row(
    paper_id: str, published: Any, title: str, abstract: str, authors: Iterable[Mapping[str, Any]]
) -> SearchRow:
    """The indexed text of one paper (authors as stored: `{"name", "affiliations"}`)."""
    names: list[str] = []
    places: dict[str, None] = {}
    for author in authors:
        name = str(author.get("name", "")).strip()
        if name:
            names.append(_plain_short(name))
        for place in author.get("affiliations") or ():
            places.setdefault(_plain_short(str(place).strip()), None)
    return {
        "paper_id": paper_id,
        "published": published,
        "title": plain(title),
        "abstract": plain(abstract),
        "authors": " ; ".join(names),
        "affiliations": " ; ".join(p for p in places if p),
    }


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


# --- the queue: ingest's side ------------------------------------------------------------

_SQLITE_QUEUE = (
    "INSERT INTO paper_index_queue (paper_id, queued_at) VALUES (?, ?) "
    "ON CONFLICT (paper_id) DO UPDATE SET queued_at = excluded.queued_at"
)
# DO UPDATE, not DO NOTHING: it locks a row already queued until ingest commits, so an
# indexer cannot take it (SKIP LOCKED) with the paper's text from before this change.
_PG_QUEUE = (
    "INSERT INTO paper_index_queue (paper_id, queued_at) "
    "SELECT unnest(%b::varchar[]), %b::timestamptz "
    "ON CONFLICT (paper_id) DO UPDATE SET queued_at = excluded.queued_at"
)


async def queue_papers(session: AsyncSession, paper_ids: Sequence[str], now: datetime) -> None:
    """Queue papers just stored or changed for the indexer (ingest's hook, its transaction)."""
    if not paper_ids:
        return
    conn = await session.connection()
    if _dialect(session) == "postgresql":
        await conn.exec_driver_sql(_PG_QUEUE, (list(paper_ids), as_utc(now)))
        return
    when = sqlite_time(now)
    await conn.exec_driver_sql(_SQLITE_QUEUE, [(pid, when) for pid in paper_ids])


# --- the indexer's side ------------------------------------------------------------------

BATCH = 1000  # papers per indexer transaction: on SQLite ingest waits at most one batch

_SQLITE_TAKE = (
    "SELECT q.paper_id, p.published, p.title, p.abstract, p.authors "
    "FROM paper_index_queue q JOIN paper p ON p.id = q.paper_id ORDER BY q.paper_id LIMIT ?"
)
_SQLITE_UNINDEX = "DELETE FROM paper_search WHERE paper_id IN (SELECT value FROM json_each(?))"
_SQLITE_DONE = "DELETE FROM paper_index_queue WHERE paper_id IN (SELECT value FROM json_each(?))"
# Two statements, not one: `FOR UPDATE OF q SKIP LOCKED` joined to `paper` read each
# paper's row from the statement's snapshot, so an ingest that re-stamped a queue row and
# committed while the take was running had its row locked here (PostgreSQL re-checks only
# the locked row) but its new text unread: the old text was indexed and the re-stamped row
# deleted, stale for good. Under READ COMMITTED the second statement sees every commit
# that re-stamped a row the first now holds; later re-stamps wait for this transaction
# and queue the paper again.
_PG_CLAIM = (
    "SELECT paper_id FROM paper_index_queue ORDER BY paper_id LIMIT %s FOR UPDATE SKIP LOCKED"
)
_PG_READ = (
    "SELECT p.id, p.published, p.title, p.abstract, p.authors FROM paper p "
    "WHERE p.id = ANY(%b::varchar[]) ORDER BY p.id"
)
_PG_DONE = "DELETE FROM paper_index_queue WHERE paper_id = ANY(%b::varchar[])"


async def index_queued(session: AsyncSession, limit: int = BATCH) -> int:
    """Index up to `limit` queued papers and unqueue them, in the caller's transaction;
    returns how many (0: the index is current)."""
    conn = await session.connection()
    # Rows of (paper_id, published, title, abstract, authors).
    if _dialect(session) == "postgresql":
        claimed = [r[0] for r in (await conn.exec_driver_sql(_PG_CLAIM, (limit,))).all()]
        if claimed:
            taken = cast(Sequence[Any], (await conn.exec_driver_sql(_PG_READ, (claimed,))).all())
            # psycopg has decoded the JSONB authors and the timestamps already.
            await index_rows(session, [search_row(r[0], r[1], r[2], r[3], r[4]) for r in taken])
            await conn.exec_driver_sql(_PG_DONE, (claimed,))
        return len(claimed)
    taken = cast(Sequence[Any], (await conn.exec_driver_sql(_SQLITE_TAKE, (limit,))).all())
    if not taken:
        return 0
    ids = _ENCODE([row[0] for row in taken])
    # A paper indexed before (a changed one) gets a fresh doc id; the trigger drops its
    # old FTS row. The published text is copied as stored: the same format.
    await conn.exec_driver_sql(_SQLITE_UNINDEX, (ids,))
    rows = [search_row(r[0], r[1], r[2], r[3], _DECODE(r[4])) for r in taken]
    await _insert_sqlite(session, rows, stored_times=True)
    await conn.exec_driver_sql(_SQLITE_DONE, (ids,))
    return len(taken)


async def index_until_current(
    sessions: async_sessionmaker[AsyncSession],
    batch: int = BATCH,
    *,
    stop: asyncio.Event | None = None,
) -> int:
    """Run the indexer until the queue is empty (or `stop` is set: checked between
    batches, the queue keeps the rest), one transaction a batch; returns how many papers
    it indexed."""
    total = 0
    while stop is None or not stop.is_set():
        async with sessions() as session, session.begin():
            done = await index_queued(session, batch)
        total += done
        if done < batch:
            break
    return total


@dataclass(frozen=True)
class IndexLag:
    """How far the index is behind the papers: queued papers and the oldest's time."""

    waiting: int
    oldest: datetime | None

    def describe(self, now: datetime) -> str:
        """One human line, empty when the index is current."""
        if not self.waiting:
            return ""
        since = ""
        if self.oldest is not None:
            since = f", the oldest queued {int((now - self.oldest).total_seconds())} s ago"
        return f"full-text index: {self.waiting} paper(s) not searchable yet{since}"


async def index_lag(session: AsyncSession) -> IndexLag:
    """The indexer's backlog (for `papertide status` and `papertide ask`)."""
    waiting, oldest = (
        await session.execute(select(func.count(), func.min(QUEUE.c.queued_at)).select_from(QUEUE))
    ).one()
    return IndexLag(int(waiting), oldest)


# SQLite: the mapping row (its doc id is the FTS rowid), then the text. Doc ids are
# numbered here: SQLite writers are serialised (BEGIN IMMEDIATE), so max(doc) is ours.
_SQLITE_LAST = text("SELECT coalesce(max(doc), 0) FROM paper_search")
# PostgreSQL: one upsert of the whole chunk from arrays (one statement, one round trip);
# the tsvectors are built by the server. Arrays go in binary (`%b`, see
# bot/ingest/paperrows.py): psycopg quotes text arrays element by element in Python.
_PG_UPSERT = (
    "INSERT INTO paper_search (paper_id, published, document) SELECT t.paper_id, t.published, "
    "setweight(to_tsvector('english', t.title), 'A') || "
    "setweight(to_tsvector('english', t.abstract), 'B') || "
    "setweight(to_tsvector('english', t.authors), 'C') || "
    "setweight(to_tsvector('english', t.affiliations), 'D') "
    "FROM unnest(%b::varchar[], %b::timestamptz[], %b::text[], %b::text[], %b::text[], "
    "%b::text[]) AS t(paper_id, published, title, abstract, authors, affiliations) "
    "ON CONFLICT (paper_id) DO UPDATE SET published = excluded.published, "
    "document = excluded.document"
)


async def index_rows(session: AsyncSession, rows: Sequence[SearchRow]) -> None:
    """Write (or rewrite, on PostgreSQL) the index entries of `rows`; the caller's
    transaction commits. On SQLite the caller has removed any older entry."""
    if not rows:
        return
    if _dialect(session) != "postgresql":
        await _insert_sqlite(session, rows, stored_times=False)
        return
    # Straight to the driver: SQLAlchemy's per-row bind processing would cost more
    # than the engines' own tokenising.
    conn = await session.connection()
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        arrays = (
            [r["paper_id"] for r in chunk],
            [as_utc(r["published"]) for r in chunk],
            [r["title"] for r in chunk],
            [r["abstract"] for r in chunk],
            [r["authors"] for r in chunk],
            [r["affiliations"] for r in chunk],
        )
        await conn.exec_driver_sql(_PG_UPSERT, arrays)


async def _insert_sqlite(
    session: AsyncSession, rows: Sequence[SearchRow], *, stored_times: bool
) -> None:
    conn = await session.connection()
    last = int((await session.execute(_SQLITE_LAST)).scalar_one())
    # Datetimes as SQLAlchemy stores them on SQLite (or already so, read back raw).
    await conn.exec_driver_sql(
        "INSERT INTO paper_search (doc, paper_id, published) VALUES (?, ?, ?)",
        [
            (doc, r["paper_id"], r["published"] if stored_times else sqlite_time(r["published"]))
            for doc, r in enumerate(rows, start=last + 1)
        ],
    )
    await conn.exec_driver_sql(
        "INSERT INTO paper_fts (rowid, title, abstract, authors, affiliations) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (doc, r["title"], r["abstract"], r["authors"], r["affiliations"])
            for doc, r in enumerate(rows, start=last + 1)
        ],
    )
