"""A channel follow's permission check (a Web API call) holds no transaction: read, check,
write. While Slack is slow to answer, other writers of the store go on."""

from __future__ import annotations

import asyncio
import json

import aiohttp
from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.events import claim_event
from bot.chat.queue import CommandWork
from bot.types import Platform
from tests.conftest import count_rows
from tests.support.chat import add_topics, make_deps
from tests.support.servers import FakeSlack, command_body, serve, signed_headers
from tests.support.slack_app import FORM, slack_routes


async def test_the_store_is_free_while_slack_checks_the_channel(
    sessions: async_sessionmaker[AsyncSession], command_work: CommandWork
) -> None:
    await add_topics(sessions)
    slack = FakeSlack()
    checking, answer_check = asyncio.Event(), asyncio.Event()

    async def slow_api(request: web.Request) -> web.Response:
        if request.match_info["method"] == "conversations.info":
            checking.set()
            await answer_check.wait()  # Slack answers only when the test says so
        return await slack.api(request)

    fake = web.Application()
    fake.router.add_route("*", "/api/{method}", slow_api)
    fake.router.add_post("/response/{n}", slack.response_url)
    async with (
        serve(fake) as slack.base,
        aiohttp.ClientSession() as http,
        slack_routes(sessions, slack.base, command_work, make_deps()) as url,
    ):
        body = command_body("follow rl-for-llm-agents", base=slack.base)
        headers = {**FORM, **signed_headers(body)}
        async with http.post(f"{url}/slack/events", data=body, headers=headers) as resp:
            assert resp.status == 200
        async with asyncio.timeout(10):  # a guard, not a measure: fails instead of hanging
            await checking.wait()
            # Another writer while the check waits: on SQLite it needs the one write
            # lock, which a transaction open around the check would hold until then.
            async with sessions() as session, session.begin():
                assert await claim_event(
                    session=session, platform=Platform.SLACK, event_id="another-writer"
                )
            assert await count_rows(sessions, "processed_event") == 1  # not claimed yet
        answer_check.set()
        answer = await slack.next_response()
        assert "This channel now follows RL for LLM Agents" in json.dumps(answer)
        # The same signed request again: known before the Web API is asked, no answer.
        async with http.post(f"{url}/slack/events", data=body, headers=headers) as resp:
            assert resp.status == 200
        await command_work.queue.join()
    assert [name for name, _ in slack.calls].count("conversations.info") == 1
    assert slack.responses == []
    assert await count_rows(sessions, "subscription") == 1
    assert await count_rows(sessions, "processed_event") == 2  # the command's, the other's
