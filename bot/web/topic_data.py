"""Read-only queries behind the public topic pages, returning plain view data."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from operator import itemgetter
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.records import paper_url
from bot.timeutil import as_utc

PAGE_SIZE = 30
SHOWN_AUTHORS = 3
SHOWN_AFFILIATIONS = 3


@dataclass(frozen=True, slots=True)
class PaperView:
    id: str
    title: str
    url: str
    published: datetime
    updated: datetime
    category: str
    categories: tuple[str, ...]
    abstract: str
    authors: tuple[str, ...]  # all names, for the Atom feed
    authors_shown: tuple[str, ...]
    authors_more: int
    affiliations_shown: tuple[str, ...]
    affiliations_more: int
    tags: tuple[tuple[str, str], ...]  # (slug, name) of the paper's topics


@dataclass(frozen=True, slots=True)
class TopicHead:
    """What a topic page and its feed show of the topic itself."""

    id: int
    slug: str
    name: str
    description: str
    updated_at: datetime


# A paper of the page as the driver returned it: id, title, abstract, authors,
# categories, primary_category, links (JSON as text), published, updated, and its
# topics' (slug, name) pairs (JSON text, or None). Hashable: it keys the rendered item.
PaperRow = tuple[Any, ...]


@dataclass(frozen=True, slots=True)
class TopicPage:
    """A topic, its paper count and one page of its papers, newest first."""

    topic: TopicHead
    total: int
    rows: list[PaperRow]
    sqlite: bool  # how the driver spelled times and in what order it gave the tags

    def view(self, row: PaperRow) -> PaperView:
        """One row as the page shows it."""
        pid, title, abstract, authors, categories, primary, links, published, updated, tags = row
        pairs = [(str(slug), str(name)) for slug, name in _DECODE(tags or "[]")]
        if self.sqlite:  # SQLite's 3.40 cannot order inside an aggregate: by name here
            pairs.sort(key=itemgetter(1))  # as ORDER BY name (BINARY: code point order)
        fields = _Fields(
            pid, title, abstract, _DECODE(authors), _DECODE(categories), primary,
            _DECODE(links), self._time(published), self._time(updated),
        )  # fmt: skip
        return to_view(fields, tuple(pairs))

    def views(self) -> list[PaperView]:
        return [self.view(row) for row in self.rows]

    def _time(self, value: Any) -> datetime:
        return _sqlite_time(value) if self.sqlite else as_utc(value)


def _sqlite_time(text: str) -> datetime:
    # How UTCDateTime stores a time on SQLite: naive UTC text.
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Fields:
    id: str
    title: str
    abstract: str
    authors: list[dict[str, Any]]
    categories: list[str]
    primary_category: str
    links: dict[str, str]
    published: datetime
    updated: datetime


_DECODE = json.JSONDecoder().decode
# The whole page in one statement, straight to the driver (as bot/ingest/paperrows.py
# writes papers): the topic by slug or name as `catalog.lookup.find_topic` finds it, its
# paper count (counted once, in `t`: beside the papers it was counted once per row),
# the page's ids from the index (topic_id, published, paper_id) (never a
# sort of the whole topic), those papers and each one's active topics. One statement
# reads one snapshot on either database, so it runs outside any transaction
# (`Store.single_reads`). Through the ORM this was three statements, 30 row objects and
# per-column conversions: more CPU than the page's rendering. JSON stays text here:
# a page decodes only the papers it has not rendered before (bot/web/paper_items.py).
_PAGE_SQL = """
WITH t AS (
    SELECT id, slug, name, description, updated_at,
        (SELECT count(*) FROM paper_topic WHERE topic_id = topic.id) AS total
    FROM topic WHERE active AND (lower(slug) = {p} OR lower(name) = {p}) LIMIT 1
), n AS (
    SELECT paper_id, published FROM paper_topic WHERE topic_id = (SELECT id FROM t)
    ORDER BY published DESC, paper_id DESC LIMIT {p} OFFSET {p}
)
SELECT t.id, t.slug, t.name, t.description, t.updated_at, t.total,
    p.id, p.title, p.abstract, p.authors{text}, p.categories{text}, p.primary_category,
    p.links{text}, p.published, p.updated,
    (SELECT {tags} FROM paper_topic x JOIN topic o ON o.id = x.topic_id
     WHERE x.paper_id = p.id AND o.active)
FROM t LEFT JOIN n ON {true} LEFT JOIN paper p ON p.id = n.paper_id
ORDER BY n.published DESC, n.paper_id DESC
"""
_SQLITE_PAGE = _PAGE_SQL.format(
    p="?", text="", true="1", tags="json_group_array(json_array(o.slug, o.name))"
)
_PG_PAGE = _PAGE_SQL.format(
    p="%s",
    text="::text",
    true="true",
    tags="json_agg(json_build_array(o.slug, o.name) ORDER BY o.name)::text",
)


async def read_topic_page(
    conn: AsyncConnection, *, text: str, limit: int = PAGE_SIZE, offset: int = 0
) -> TopicPage | None:
    """The active topic named `text` (slug or name, any case) with one page of its
    papers, or None when there is no such topic."""
    wanted = text.strip().lower()
    sqlite = conn.dialect.name == "sqlite"
    found = await conn.exec_driver_sql(
        _SQLITE_PAGE if sqlite else _PG_PAGE, (wanted, wanted, limit, offset)
    )
    rows: list[Any] = list(found.fetchall())  # plain driver values: no type processing
    if not rows:
        return None
    tid, slug, name, description, updated_at, total = rows[0][:6]
    head = TopicHead(
        tid, slug, name, description, _sqlite_time(updated_at) if sqlite else as_utc(updated_at)
    )
    papers = [tuple(row[6:]) for row in rows if row[6] is not None]
    return TopicPage(head, int(total), papers, sqlite)


class PaperLike(Protocol):
    """What `to_view` reads: a `Paper`, or a row of the page decoded."""

    @property
    def id(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def abstract(self) -> str: ...
    @property
    def authors(self) -> list[dict[str, Any]]: ...
    @property
    def categories(self) -> list[str]: ...
    @property
    def primary_category(self) -> str: ...
    @property
    def links(self) -> dict[str, str]: ...
    @property
    def published(self) -> datetime: ...
    @property
    def updated(self) -> datetime: ...


def to_view(paper: PaperLike, tags: tuple[tuple[str, str], ...]) -> PaperView:
    """A paper as the topic page shows it: first authors and affiliations, then '+N'."""
    names = tuple(str(a.get("name", "")) for a in paper.authors if a.get("name"))
    affiliations: list[str] = []
    for author in paper.authors:
        for aff in author.get("affiliations", []):
            if aff and aff not in affiliations:
                affiliations.append(str(aff))
    return PaperView(
        id=paper.id,
        title=paper.title,
        url=paper_url(paper.id, paper.links),
        published=paper.published,
        updated=paper.updated,
        category=paper.primary_category or (paper.categories[0] if paper.categories else ""),
        categories=tuple(paper.categories),
        abstract=paper.abstract,
        authors=names,
        authors_shown=names[:SHOWN_AUTHORS],
        authors_more=max(0, len(names) - SHOWN_AUTHORS),
        affiliations_shown=tuple(affiliations[:SHOWN_AFFILIATIONS]),
        affiliations_more=max(0, len(affiliations) - SHOWN_AFFILIATIONS),
        tags=tags,
    )


@dataclass(frozen=True, slots=True)
class Bar:
    count: int
    level: int  # 0..20: the CSS class h<level> sets the height (no inline styles: CSP)
    label: str  # "Week of Jul 13: 5 papers", read by screen readers


def chart_bars(weekly: list[int], now: datetime) -> list[Bar]:
    """Twelve weekly bars, oldest first; the last is the week containing `now`."""
    top = max(weekly, default=0) or 1
    monday = (now - timedelta(days=now.weekday())).date()
    first = monday - timedelta(weeks=len(weekly) - 1)
    bars = []
    for i, count in enumerate(weekly):
        week = first + timedelta(weeks=i)
        noun = "paper" if count == 1 else "papers"
        label = f"Week of {week:%b} {week.day}: {count} {noun}"
        bars.append(Bar(count, round(count / top * 20), label))
    return bars


def week_labels(weeks: int, now: datetime) -> tuple[str, str]:
    """('Jul 13', 'Week of Sep 28'): the chart's first and last week, as the reference."""
    monday = (now - timedelta(days=now.weekday())).date()
    first = monday - timedelta(weeks=weeks - 1)
    return f"{first:%b} {first.day}", f"Week of {monday:%b} {monday.day}"
