"""Following is one insert-ignore, whether the web flow or a chat command follows.

The web flow used to check-then-insert in a savepoint, chat used INSERT … ON CONFLICT;
both paths, run at the same time, must still leave one subscription.
"""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.catalog.lookup import find_topic
from bot.config import Settings
from bot.outbox.targets import get_or_create_target
from bot.subscriptions.follows import follow_topic
from bot.subscriptions.optin import request_subscription
from bot.timeutil import utcnow
from bot.types import Platform, TargetKind
from tests.conftest import count_rows
from tests.support.chat import add_topics


async def test_web_and_chat_following_at_once_leave_one_row(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    await add_topics(sessions)

    async def by_web() -> None:
        async with sessions() as session, session.begin():
            await request_subscription(
                session=session, email="ann@example.org", settings=settings, now=utcnow(),
                topic_slug="RL for LLM Agents",  # a topic's name works as well as its slug
            )  # fmt: skip

    async def by_chat() -> bool:
        async with sessions() as session, session.begin():
            box = await get_or_create_target(
                session=session, platform=Platform.EMAIL, workspace="", address="ann@example.org",
                kind=TargetKind.EMAIL,
            )  # fmt: skip
            topic = await find_topic(session=session, text="rl-for-llm-agents")
            return await follow_topic(session=session, target=box, topic=topic)

    await asyncio.gather(by_web(), by_chat(), by_chat())
    assert await count_rows(sessions, "subscription") == 1
    assert await count_rows(sessions, "target") == 1
