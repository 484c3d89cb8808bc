"""`/papers ask` in Discord: real discord.py interactions, REST to a local stand-in."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp import web
from discord.http import Route
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.answer import Answer, TopicRef
from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.platforms.discord.answer import answer_embed
from bot.platforms.discord.app import PapersBot, use_discord_api_url
from bot.platforms.discord.render import DESCRIPTION_MAX, EMBED_TOTAL
from tests.platforms.discord.test_discord import FakeDiscord, _invoke, _json, _sub
from tests.support.ask import made_answer
from tests.support.chat import add_topics, make_deps
from tests.support.servers import serve

THREAD = {
    "id": "777",
    "type": 11,
    "guild_id": "333",
    "parent_id": "444",
    "name": "which papers use GRPO?",
    "owner_id": "222",
    "thread_metadata": {
        "archived": False,
        "auto_archive_duration": 1440,
        "archive_timestamp": "2026-07-01T00:00:00+00:00",
        "locked": False,
    },
    "message_count": 0,
    "member_count": 1,
    "rate_limit_per_user": 0,
    "flags": 0,
}


class FakeWithThreads(FakeDiscord):
    refuse_threads: bool = False

    async def handle(self, request: web.Request) -> web.Response:
        if request.path.endswith("/threads"):
            body = await request.json()
            self.calls.append((request.method, request.path, body))
            if self.refuse_threads:
                return _json({"message": "Missing Permissions", "code": 50013}, status=403)
            return _json(THREAD)
        return await super().handle(request)


@pytest.fixture
async def api() -> AsyncIterator[tuple[FakeWithThreads, str]]:
    fake = FakeWithThreads()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", fake.handle)
    old = Route.BASE
    async with serve(app) as base:
        try:
            yield fake, f"{base}/api/v10"
        finally:
            Route.BASE = old


async def _bot(
    base: str, sessions: async_sessionmaker[AsyncSession], asked: list[Any], work: CommandWork
) -> PapersBot:
    async def ask(topic: TopicRef | None, question: str) -> Answer:
        asked.append((topic, question))
        return made_answer()

    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    use_discord_api_url(settings.discord_api_url)
    return PapersBot(settings=settings, sessions=sessions, deps=make_deps(ask=ask), work=work)


def _bodies(fake: FakeDiscord, suffix: str) -> list[Any]:
    return [body for _, path, body in fake.calls if path.endswith(suffix)]


async def test_private_answer_replaces_the_thinking_message(
    api: tuple[FakeWithThreads, str],
    sessions: async_sessionmaker[AsyncSession],
    command_work: CommandWork,
) -> None:
    fake, base = api
    await add_topics(sessions)
    asked: list[Any] = []
    async with await _bot(base, sessions, asked, command_work) as bot:
        await bot.login("tkn")
        await _invoke(
            bot, _sub("ask", topic="rl-for-llm-agents", question="which papers use GRPO?")
        )
    (deferred,) = _bodies(fake, "/callback")
    assert deferred["type"] == 5  # acknowledged at once: "papertide is thinking…"
    assert deferred["data"]["flags"] == 64  # only the asker sees it
    followups = [b for _, p, b in fake.calls if p.startswith("/api/v10/webhooks/")]
    (answer,) = followups
    assert answer["allowed_mentions"] == {"parse": []}
    embed = answer["embeds"][0]
    assert "**GRPO**" in embed["description"]
    assert "@everyone" not in json.dumps(embed)
    assert "[[1]](https://arxiv.org/abs/2609.00001)" in embed["description"]
    assert asked[0][1] == "which papers use GRPO?"
    assert _bodies(fake, "/threads") == []


async def test_thread_answer_opens_a_thread_on_the_question(
    api: tuple[FakeWithThreads, str],
    sessions: async_sessionmaker[AsyncSession],
    command_work: CommandWork,
) -> None:
    fake, base = api
    await add_topics(sessions)
    async with await _bot(base, sessions, [], command_work) as bot:
        await bot.login("tkn")
        await _invoke(
            bot, _sub("ask", topic="rl-for-llm-agents", question="GRPO agents", post="thread")
        )
    question = next(b for _, p, b in fake.calls if p == "/api/v10/channels/444/messages")
    assert question["allowed_mentions"] == {"parse": []}
    assert "Question about RL for LLM Agents" in question["content"]
    assert "@everyone" not in question["content"]  # the question text is escaped
    (thread,) = _bodies(fake, "/threads")
    assert thread["name"].startswith("which papers use GRPO?")
    posted = next(b for _, p, b in fake.calls if p == "/api/v10/channels/777/messages")
    assert "**GRPO**" in posted["embeds"][0]["description"]
    pointer = [b for _, p, b in fake.calls if p.startswith("/api/v10/webhooks/")][-1]
    assert pointer["content"] == "Answer posted in the thread <#777>."
    assert pointer["flags"] == 64


async def test_thread_refused_answers_privately(
    api: tuple[FakeWithThreads, str],
    sessions: async_sessionmaker[AsyncSession],
    command_work: CommandWork,
) -> None:
    fake, base = api
    fake.refuse_threads = True
    await add_topics(sessions)
    async with await _bot(base, sessions, [], command_work) as bot:
        await bot.login("tkn")
        await _invoke(bot, _sub("ask", topic="rl-for-llm-agents", question="GRPO", post="thread"))
    private = [b for _, p, b in fake.calls if p.startswith("/api/v10/webhooks/")][-1]
    assert private["flags"] == 64
    assert "could not post or open a thread" in private["embeds"][0]["description"]


def test_a_long_answer_fits_one_embed() -> None:
    embed = answer_embed(made_answer(papers=20, total=900)).to_dict()
    assert len(embed["description"]) <= DESCRIPTION_MAX
    assert len(embed["title"]) <= 256
    size = len(embed["title"]) + len(embed["description"]) + len(embed["footer"]["text"])
    assert size <= EMBED_TOTAL
