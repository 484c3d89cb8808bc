"""The full-text index's one writer: `paper_search` (and, on SQLite, `paper_fts`).

Ingest calls `index_papers` for every paper it inserts or changes, in the same
transaction, so the index is never behind the `paper` table. The engines do the heavy
work in C: SQLite FTS5 (`porter unicode61`) and PostgreSQL `to_tsvector('english', …)`
with a GIN index. Both receive the same text: LaTeX resolved, accents folded
(`bot.matching.textnorm.fold`, which PostgreSQL cannot do without an extension), the
authors' names and their affiliations as one field each.

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
from typing import Any, TypedDict

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from bot.matching.textnorm import fold
from bot.store.columns import UTCDateTime
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


def search_row(
    paper_id: str, published: Any, title: str, abstract: str, authors: Iterable[Mapping[str, Any]]
) -> SearchRow:
    """The indexed text of one paper (authors as stored: `{"name", "affiliations"}`)."""
    names: list[str] = []
    places: dict[str, None] = {}
    for author in authors:
        name = str(author.get("name", "")).strip()
        if name:
            names.append(name)
        for place in author.get("affiliations") or ():
            places.setdefault(str(place).strip(), None)
    return {
        "paper_id": paper_id,
        "published": published,
        "title": fold(title),
        "abstract": fold(abstract),
        "authors": fold(" ; ".join(names)),
        "affiliations": fold(" ; ".join(p for p in places if p)),
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


_WHEN = bindparam("published", type_=UTCDateTime())

# SQLite: the mapping row first (its doc id is the FTS rowid), then the text.
_SQLITE_DELETE = text("DELETE FROM paper_search WHERE paper_id = :paper_id")
_SQLITE_MAP = text(
    "INSERT INTO paper_search (paper_id, published) VALUES (:paper_id, :published)"
).bindparams(_WHEN)
_SQLITE_TEXT = text(
    "INSERT INTO paper_fts (rowid, title, abstract, authors, affiliations) "
    "SELECT doc, :title, :abstract, :authors, :affiliations FROM paper_search "
    "WHERE paper_id = :paper_id"
)
# PostgreSQL: one upsert; the tsvector is built by the server.
_PG_UPSERT = text(
    "INSERT INTO paper_search (paper_id, published, document) VALUES (:paper_id, :published, "
    "setweight(to_tsvector('english', :title), 'A') || "
    "setweight(to_tsvector('english', :abstract), 'B') || "
    "setweight(to_tsvector('english', :authors), 'C') || "
    "setweight(to_tsvector('english', :affiliations), 'D')) "
    "ON CONFLICT (paper_id) DO UPDATE SET published = excluded.published, "
    "document = excluded.document"
).bindparams(_WHEN)


async def index_rows(session: AsyncSession, rows: Sequence[SearchRow]) -> None:
    """Write (or rewrite) the index entries of `rows`; the caller's transaction commits."""
    if not rows:
        return
    for start in range(0, len(rows), _CHUNK):
        chunk = [dict(r) for r in rows[start : start + _CHUNK]]
        if _dialect(session) == "postgresql":
            await session.execute(_PG_UPSERT, chunk)
            continue
        # Delete-then-insert: a changed paper gets a fresh doc id and FTS row (the
        # trigger drops the old FTS row), a new one simply has nothing to delete.
        await session.execute(_SQLITE_DELETE, [{"paper_id": r["paper_id"]} for r in chunk])
        await session.execute(_SQLITE_MAP, chunk)
        await session.execute(_SQLITE_TEXT, chunk)


async def index_papers(session: AsyncSession, records: Sequence[PaperRecord]) -> None:
    """Keep the index current for papers just inserted or changed (ingest's hook)."""
    await index_rows(session, search_rows(records))
