"""Read-only queries behind the public topic pages, returning plain view data."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import bindparam
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.store.models import Paper, PaperTopic, Topic
from bot.store.records import paper_url

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


# Built once: composing a statement costs more than running it from SQLAlchemy's cache.
# The page's ids come straight from the index (topic_id, published, paper_id), then only
# those rows: never a sort of every paper in the topic.
_NEWEST = (
    select(col(PaperTopic.paper_id), col(PaperTopic.published))
    .where(col(PaperTopic.topic_id) == bindparam("topic_id"))
    .order_by(col(PaperTopic.published).desc(), col(PaperTopic.paper_id).desc())
    .limit(bindparam("limit"))
    .offset(bindparam("offset"))
    .subquery()
)
# Plain rows, not ORM objects: the page only reads them, and building 30 tracked
# instances cost more than the query.
_SHOWN: list[Any] = [
    col(Paper.id),
    col(Paper.title),
    col(Paper.abstract),
    col(Paper.authors),
    col(Paper.categories),
    col(Paper.primary_category),
    col(Paper.links),
    col(Paper.published),
    col(Paper.updated),
]
_PAGE = (
    select(*_SHOWN)
    .join(_NEWEST, _NEWEST.c.paper_id == col(Paper.id))
    .order_by(_NEWEST.c.published.desc(), _NEWEST.c.paper_id.desc())
)
_TAGS = (
    select(col(PaperTopic.paper_id), col(Topic.slug), col(Topic.name))
    .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
    .where(col(PaperTopic.paper_id).in_(bindparam("ids", expanding=True)))
    .where(col(Topic.active).is_(True))
    .order_by(col(Topic.name))
)


async def latest_papers(
    *, session: AsyncSession, topic_id: int, limit: int = PAGE_SIZE, offset: int = 0
) -> list[PaperView]:
    """The topic's papers, newest first, each with its other topics as tags."""
    found = await session.execute(_PAGE, {"topic_id": topic_id, "limit": limit, "offset": offset})
    papers = list(found.all())
    tags: dict[str, list[tuple[str, str]]] = {p.id: [] for p in papers}
    if papers:
        rows = await session.execute(_TAGS, {"ids": list(tags)})
        for paper_id, slug, name in rows.all():
            tags[paper_id].append((slug, name))
    return [to_view(p, tuple(tags[p.id])) for p in papers]


class PaperLike(Protocol):
    """What `to_view` reads: a `Paper` or a row of `_PAGE`."""

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
