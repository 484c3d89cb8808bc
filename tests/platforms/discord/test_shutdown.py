"""Discord at shutdown: a command taken before `stop` is answered before the client closes."""

from __future__ import annotations

import asyncio
import threading

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.queue import BUSY
from bot.config import Settings
from bot.platforms.discord.app import PapersBot, use_discord_api_url
from bot.platforms.stop import InFlight
from bot.service.chat_deps import build_command_work
from tests.conftest import count_rows
from tests.platforms.discord.test_discord import (  # noqa: F401  (a fixture)
    FakeDiscord,
    _invoke,
    _sub,
    discord_api,
)
from tests.support.chat import add_topics, make_deps


async def _gateway() -> None:
    """Stands in for the gateway connection: runs until cancelled, as bot.start does."""
    await asyncio.Event().wait()


async def test_a_command_taken_before_stop_gets_its_reply(
    discord_api: tuple[FakeDiscord, str],  # noqa: F811
    sessions: async_sessionmaker[AsyncSession],
    db_url: str,
) -> None:
    fake, base = discord_api
    await add_topics(sessions)
    work = build_command_work(db_url, workers=1, capacity=4)
    gate = threading.Event()

    async def hold() -> None:  # the command's work waits behind this one
        await asyncio.to_thread(gate.wait)

    settings = Settings(discord_token="tkn", discord_application_id="222", discord_api_url=base)
    use_discord_api_url(settings.discord_api_url)
    stop = asyncio.Event()
    try:
        async with PapersBot(
            settings=settings, sessions=sessions, deps=make_deps(), work=work
        ) as bot:
            await bot.login("tkn")
            gateway = asyncio.create_task(bot.serve_until(_gateway(), stop))
            assert work.queue.submit("someone else", hold)
            command = asyncio.create_task(_invoke(bot, _sub("follow", topic="rl-for-llm-agents")))
            # The follow is accepted and waiting (a count kept on the queue's thread).
            while work.queue.pending < 2:  # noqa: ASYNC110
                await asyncio.sleep(0.01)

            async def finish_work() -> None:
                # Once shutdown is under way (or, were it not waited for, the client closed).
                while not (bot.in_flight.closing or bot.is_closed()):  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
                if not bot.is_closed():
                    await _invoke(bot, _sub("list"))  # arrives while stopping: refused
                gate.set()  # the follow's work runs now, after shutdown began

            releaser = asyncio.create_task(finish_work())
            stop.set()  # shutdown begins mid-command
            await gateway  # returns once the follow is answered; then the client closes
        await releaser
        await command
    finally:
        gate.set()
        await work.queue.close()
    replies = [body for _, path, body in fake.calls if path.endswith("/callback")]
    titles = [reply["data"]["embeds"][0]["title"] for reply in replies]
    assert titles == [BUSY, "This channel now follows RL for LLM Agents."]
    assert await count_rows(sessions, "subscription") == 1


async def test_shutdown_does_not_wait_forever_for_an_answer() -> None:
    in_flight = InFlight()
    stuck = asyncio.Event()

    async def handler() -> None:
        async with in_flight.track():
            await stuck.wait()

    task = asyncio.create_task(handler())
    await asyncio.sleep(0)
    await in_flight.settle(limit=0.05)
    assert in_flight.closing
    assert not task.done()  # given up on, not awaited: the caller goes on closing
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
