"""A topic page finds its topic and counts its papers in one statement."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.catalog.lookup import TopicNotFound, count_papers, find_topic
from bot.store.models import Paper, PaperTopic, Topic

WHEN = datetime(2026, 9, 1, tzinfo=UTC)


async def _seed(sessions: async_sessionmaker[AsyncSession]) -> tuple[int, int]:
    async with sessions() as session, session.begin():
        rl, cv, idle = (
            Topic(slug="rl-agents", name="RL Agents"),
            Topic(slug="vision", name="Vision"),
            Topic(slug="quiet", name="Quiet"),
        )
        session.add_all([rl, cv, idle])
        session.add_all(
            Paper(
                id=f"2609.{i:05d}",
                title=f"P{i}",
                abstract="",
                published=WHEN,
                updated=WHEN,
                ingested_at=WHEN,
            )
            for i in range(5)
        )
        await session.flush()
        assert rl.id is not None
        assert cv.id is not None
        session.add_all(
            PaperTopic(paper_id=f"2609.{i:05d}", topic_id=rl.id, matched_at=WHEN) for i in range(5)
        )
        session.add(PaperTopic(paper_id="2609.00000", topic_id=cv.id, matched_at=WHEN))
        return rl.id, cv.id


async def test_a_topic_is_found_by_slug_or_name_in_any_case_with_its_count(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    rl, cv = await _seed(sessions)
    async with sessions() as session:
        found = await find_topic(session=session, text="RL-Agents")
        assert (found.id, await count_papers(session=session, topic_id=rl)) == (rl, 5)
        by_name = await find_topic(session=session, text="VISION")
        assert (by_name.id, await count_papers(session=session, topic_id=cv)) == (cv, 1)
        empty = await find_topic(session=session, text="quiet")
        assert (empty.slug, await count_papers(session=session, topic_id=empty.id)) == ("quiet", 0)


async def test_an_unknown_topic_still_says_what_was_meant(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await _seed(sessions)
    async with sessions() as session:
        with pytest.raises(TopicNotFound) as raised:
            await find_topic(session=session, text="visoin")
    assert raised.value.suggestions == ["vision"]
