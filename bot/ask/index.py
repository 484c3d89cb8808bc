"""The full-text index's one writer: `paper_search` (and, on SQLite, `paper_fts`).

Ingest calls `index_papers` for every paper it inserts or changes, in the same
transaction, so the index is never behind the `paper` table. The engines do the work in
C: SQLite FTS5 (`porter unicode61`) and PostgreSQL `to_tsvector('english', …)` with a
GIN index. Both receive the same text: as stored when it is ASCII (both fold case, and
LaTeX commands are words to them), accents folded otherwise (PostgreSQL has no unaccent
without an extension); the authors' names and their affiliations are one field each.
Stemming in Python instead would make the engines' tokens identical, but costs more per
paper than the engines' own stemmers (bench/ask.py measures ingest with and without).

SQLite: `paper_search(doc INTEGER PRIMARY KEY, paper_id UNIQUE, published)` maps a paper
to the FTS5 rowid (a rowid of `paper` itself could change under VACUUM), and
`paper_fts(title, abstract, authors, affiliations)` holds the text; a trigger deletes the
FTS row with its mapping. PostgreSQL: `paper_search(paper_id PRIMARY KEY, published,
document tsvector)`, fields weighted A (title), B (abstract), C (authors), D
(affiliations). The migration 0005_fulltext creates both and backfills them with
`search_rows`, the same function ingest uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any, TypedDict

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from bot.matching.textnorm import fold
from bot.store.columns import sqlite_time
from bot.timeutil import as_utc
from bot.types import PaperRecord

_CHUNK = 500


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


def search_rows(records: Iterable[PaperRecord]) -> list[SearchRow]:
    """`search_row` for records as ingest holds them."""
    return [
        search_row(
            r.id,
            r.published,
            r.title,
            r.abstract,
            ({"name": a.name, "affiliations": a.affiliations} for a in r.authors),
        )
        for r in records
    ]


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else "sqlite"


# SQLite: the mapping row (its doc id is the FTS rowid), then the text. Doc ids are
# numbered here: SQLite writers are serialised (BEGIN IMMEDIATE), so max(doc) is ours.
_SQLITE_DELETE = text("DELETE FROM paper_search WHERE paper_id = :paper_id")
_SQLITE_LAST = text("SELECT coalesce(max(doc), 0) FROM paper_search")
# PostgreSQL: one upsert of the whole chunk from arrays (one statement, one round trip);
# the tsvectors are built by the server.
_PG_UPSERT = (
    "INSERT INTO paper_search (paper_id, published, document) SELECT t.paper_id, t.published, "
    "setweight(to_tsvector('english', t.title), 'A') || "
    "setweight(to_tsvector('english', t.abstract), 'B') || "
    "setweight(to_tsvector('english', t.authors), 'C') || "
    "setweight(to_tsvector('english', t.affiliations), 'D') "
    "FROM unnest(%s::varchar[], %s::timestamptz[], %s::text[], %s::text[], %s::text[], "
    "%s::text[]) AS t(paper_id, published, title, abstract, authors, affiliations) "
    "ON CONFLICT (paper_id) DO UPDATE SET published = excluded.published, "
    "document = excluded.document"
)


async def index_rows(
    session: AsyncSession, rows: Sequence[SearchRow], *, replace: bool = True
) -> None:
    """Write (or rewrite) the index entries of `rows`; the caller's transaction commits.
    `replace=False` says none of them is indexed yet (new papers): nothing to delete."""
    if not rows:
        return
    # Straight to the driver: SQLAlchemy's per-row bind processing would cost more
    # than the engines' own tokenising.
    conn = await session.connection()
    postgres = _dialect(session) == "postgresql"
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        if postgres:
            arrays = (
                [r["paper_id"] for r in chunk],
                [as_utc(r["published"]) for r in chunk],
                [r["title"] for r in chunk],
                [r["abstract"] for r in chunk],
                [r["authors"] for r in chunk],
                [r["affiliations"] for r in chunk],
            )
            await conn.exec_driver_sql(_PG_UPSERT, arrays)
            continue
        if replace:
            # A changed paper gets a fresh doc id; the trigger drops its old FTS row.
            await session.execute(_SQLITE_DELETE, [{"paper_id": r["paper_id"]} for r in chunk])
        last = int((await session.execute(_SQLITE_LAST)).scalar_one())
        # Datetimes as SQLAlchemy stores them on SQLite.
        await conn.exec_driver_sql(
            "INSERT INTO paper_search (doc, paper_id, published) VALUES (?, ?, ?)",
            [
                (doc, r["paper_id"], sqlite_time(r["published"]))
                for doc, r in enumerate(chunk, start=last + 1)
            ],
        )
        await conn.exec_driver_sql(
            "INSERT INTO paper_fts (rowid, title, abstract, authors, affiliations) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (doc, r["title"], r["abstract"], r["authors"], r["affiliations"])
                for doc, r in enumerate(chunk, start=last + 1)
            ],
        )


async def index_papers(
    session: AsyncSession,
    new: Sequence[PaperRecord] = (),
    changed: Sequence[PaperRecord] = (),
) -> None:
    """Keep the index current for papers just inserted and papers changed (ingest's hook)."""
    await index_rows(session, search_rows(changed), replace=True)
    await index_rows(session, search_rows(new), replace=False)
