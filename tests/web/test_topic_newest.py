"""A topic page's newest papers come from the index on (topic, published) (issue 14): the
database copies each paper's date into its topic rows, and follows a change of date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.matching.matches import record_matches
from bot.store.models import Paper, PaperTopic, Topic
from bot.types import Match, MatchKind
from bot.web.topic_data import TopicPage, read_topic_page

START = datetime(2026, 9, 1, tzinfo=UTC)


async def test_newest_first_from_the_copied_dates_which_follow_a_changed_date(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        topic = Topic(slug="t", name="T")
        session.add(topic)
        for i in range(40):  # inserted in an order unrelated to their dates
            when = START + timedelta(hours=(i * 7) % 40)
            session.add(Paper(id=f"2609.{i:05d}", title=f"P{i}", abstract="", authors=[],
                              categories=["cs.LG"], published=when, updated=when))  # fmt: skip
        await session.flush()
        assert topic.id is not None
        topic_id = topic.id
        matches = [Match(f"2609.{i:05d}", MatchKind.TOPIC, topic_id) for i in range(40)]
        assert len(await record_matches(session=session, matches=matches, now=START)) == 40
    async with sessions() as session:
        rows = (await session.execute(select(PaperTopic, Paper).join(
            Paper, col(Paper.id) == col(PaperTopic.paper_id)))).all()  # fmt: skip
        assert all(pt.published == p.published for pt, p in rows)
        first = await _page(session, limit=30)
        rest = await _page(session, limit=30, offset=30)
    assert first.topic.id == topic_id
    assert first.total == rest.total == 40
    shown = [(p.published, p.id) for p in first.views() + rest.views()]
    assert len(shown) == 40
    assert shown == sorted(shown, reverse=True)
    # arXiv's record repairs a date: the paper moves on the page at once.
    oldest = shown[-1][1]
    async with sessions() as session, session.begin():
        await session.execute(
            update(Paper).where(col(Paper.id) == oldest).values(published=START + timedelta(days=9))
        )
    async with sessions() as session:
        top = await _page(session, limit=1)
    assert [p.id for p in top.views()] == [oldest]


async def _page(session: AsyncSession, *, limit: int, offset: int = 0) -> TopicPage:
    page = await read_topic_page(await session.connection(), text="t", limit=limit, offset=offset)
    assert page is not None
    return page
