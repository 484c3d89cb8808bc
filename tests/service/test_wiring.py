"""The composition root's seams filled with the real pieces: `/papers` on a real store."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.catalog.file import load_topics
from bot.catalog.sync import sync_topics
from bot.chat.commands import Reply, run_command
from bot.config import Settings
from bot.ingest.poll import run_poll
from bot.service.chat_deps import command_deps
from bot.store.models import Alert, OutboxRow
from tests.support.chat import make_ctx


async def _say(sessions: async_sessionmaker[AsyncSession], settings: Settings, text: str) -> Reply:
    async with sessions() as session:
        reply = await run_command(
            session=session, ctx=make_ctx(), text=text, deps=command_deps(settings)
        )
        await session.commit()
    return reply


async def test_chat_commands_use_the_real_query_language_matching_and_momentum(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    async with sessions() as session, session.begin():
        await sync_topics(session=session, topics=load_topics(settings.topics_file))
    await run_poll(settings=settings, sessions=sessions, source_name="sample")

    bad = await _say(sessions, settings, 'alert add ti:GRPO AND abs:"multi-turn')
    assert bad.error
    assert "unclosed quote at 16" in bad.title + " ".join(bad.lines)

    tried = await _say(sessions, settings, 'alert test au:"Yi Wu"')
    assert not tried.error
    text = tried.title + "\n" + "\n".join(tried.lines)
    assert "Yi Wu" in text or "paper" in text

    added = await _say(sessions, settings, "alert add abs:(ALFWorld OR WebShop) ANDNOT cat:cs.CV")
    assert not added.error, added
    async with sessions() as session:
        stored = (await session.execute(select(Alert))).scalar_one()
    assert stored.query == "(abs:ALFWorld OR abs:WebShop) ANDNOT cat:cs.CV"  # canonical form

    topics = await _say(sessions, settings, "topics rl for llm")
    assert any("papers in the last four weeks" in line for line in topics.lines), topics

    digest = await _say(sessions, settings, "digest ann@lab.example.org")
    assert "ann@lab.example.org" in digest.title
    async with sessions() as session:
        rows = (
            await session.execute(select(OutboxRow).where(col(OutboxRow.kind) == "confirm"))
        ).scalars()
        confirm = list(rows)
    assert len(confirm) == 1
    assert "/link/" in confirm[0].payload["text"]  # the mailbox owner links, or nothing does
