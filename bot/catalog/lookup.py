"""Finding and listing topics: the one lookup every command, page and flow uses.

A topic is named by slug or name, case-insensitively; a name that matches nothing
raises `TopicNotFound` with the closest slugs, so every caller can say "did you mean".
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from sqlalchemy import bindparam, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.store.models import PaperTopic, Topic


class TopicNotFound(PapertideError):
    """No active topic by that slug or name; `suggestions` are the closest slugs."""

    def __init__(self, text: str, suggestions: list[str]) -> None:
        hint = f" Did you mean {', '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"There is no topic called {text[:80]!r}.{hint}")
        self.text = text
        self.suggestions = suggestions


# Built once (every topic page and command looks a topic up): composing the statement
# cost more than running it.
_BY_NAME = select(Topic).where(
    col(Topic.active).is_(True),
    or_(
        func.lower(col(Topic.slug)) == bindparam("wanted"),
        func.lower(col(Topic.name)) == bindparam("wanted"),
    ),
)
_COUNT = select(func.count()).where(col(PaperTopic.topic_id) == bindparam("topic_id"))


# The topic and its paper count in one statement (one round trip for a topic page).
async def find_topic(*, session: AsyncSession, text: str) -> Topic:
    """The active topic whose slug or name is `text` (any case), else TopicNotFound."""
    wanted = text.strip().lower()
    topic = (await session.execute(_BY_NAME, {"wanted": wanted})).scalars().first()
    if topic is not None:
        return topic
    rows = (
        await session.execute(
            select(col(Topic.slug), col(Topic.name)).where(col(Topic.active).is_(True))
        )
    ).all()
    by_key = {slug.lower(): slug for slug, _ in rows}
    by_key.update({name.lower(): slug for slug, name in rows})
    close = difflib.get_close_matches(wanted, list(by_key), n=6, cutoff=0.5)
    raise TopicNotFound(text, list(dict.fromkeys(by_key[c] for c in close))[:3])


async def search_topics(*, session: AsyncSession, words: str = "") -> list[Topic]:
    """Active topics whose slug, name or description contains every word, by name."""
    stmt = select(Topic).where(col(Topic.active).is_(True)).order_by(col(Topic.name))
    for word in words.lower().split():
        pattern = f"%{word.replace('%', '').replace('_', '')}%"
        stmt = stmt.where(
            or_(
                func.lower(col(Topic.slug)).like(pattern),
                func.lower(col(Topic.name)).like(pattern),
                func.lower(col(Topic.description)).like(pattern),
            )
        )
    return list((await session.execute(stmt)).scalars())


@dataclass(frozen=True, slots=True)
class TopicSummary:
    """A topic with its paper count: the catalog as `topics list` and /topics show it."""

    slug: str
    name: str
    categories: list[str]
    query: str
    related: list[str]
    description: str
    papers: int


async def topic_summaries(*, session: AsyncSession) -> list[TopicSummary]:
    """Every active topic with its paper count, by name."""
    counts = (
        select(col(PaperTopic.topic_id), func.count().label("n"))
        .group_by(col(PaperTopic.topic_id))
        .subquery()
    )
    rows = await session.execute(
        select(Topic, func.coalesce(counts.c.n, 0))
        .outerjoin(counts, counts.c.topic_id == col(Topic.id))
        .where(col(Topic.active).is_(True))
        .order_by(col(Topic.name))
    )
    return [
        TopicSummary(
            t.slug, t.name, list(t.categories), t.query, list(t.related), t.description, int(n)
        )
        for t, n in rows.all()
    ]


async def count_papers(*, session: AsyncSession, topic_id: int) -> int:
    """How many papers are filed under a topic."""
    return int((await session.execute(_COUNT, {"topic_id": topic_id})).scalar_one())
