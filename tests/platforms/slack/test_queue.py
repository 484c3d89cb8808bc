"""Commands after the ack (issue 14): a full queue says "busy" in the ack, one person's
commands are answered in order, and a replay sent to another process still acts once."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.queue import BUSY, CommandQueue
from bot.config import Settings
from bot.platforms.slack.app import build_slack_app, install_slack_routes
from tests.conftest import count_rows
from tests.support.chat import add_topics, make_deps
from tests.support.servers import (
    SIGNING_SECRET,
    FakeSlack,
    command_body,
    fake_slack,
    serve,
    signed_headers,
)

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@asynccontextmanager
async def papertide(
    sessions: async_sessionmaker[AsyncSession], slack: FakeSlack, queue: CommandQueue
) -> AsyncIterator[str]:
    """One papertide process's Slack routes over the shared store."""
    settings = Settings(
        slack_bot_token="xoxb-test",
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=f"{slack.base}/api/",
    )
    bolt = build_slack_app(settings=settings, sessions=sessions, deps=make_deps(), queue=queue)
    app = web.Application()
    install_slack_routes(app, bolt, signing_secret=SIGNING_SECRET, sessions=sessions)
    async with serve(app) as url:
        yield url
    await queue.close()


async def post(http: aiohttp.ClientSession, url: str, body: str, headers: dict[str, str]) -> str:
    async with http.post(f"{url}/slack/events", data=body, headers={**FORM, **headers}) as r:
        assert r.status == 200
        return await r.text()


async def test_a_full_queue_answers_busy_in_the_ack_and_does_nothing(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    queue = CommandQueue(workers=1, capacity=1)
    gate = asyncio.Event()
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, queue) as url,
        aiohttp.ClientSession() as http,
    ):
        assert queue.submit("someone else", gate.wait)  # fills the only slot
        body = command_body("follow diffusion-models", base=slack.base)
        ack = await post(http, url, body, signed_headers(body))
        assert BUSY in json.loads(ack)["text"]
        gate.set()
        await queue.join()
        assert await count_rows(sessions, "subscription") == 0
        assert slack.responses == []  # the ack was the answer
        # Room again: the same words, a new command, are done and answered.
        body = command_body("follow diffusion-models", base=slack.base)
        assert await post(http, url, body, signed_headers(body)) == ""
        assert "now follows Diffusion Models" in json.dumps(await slack.next_response())
    assert await count_rows(sessions, "subscription") == 1


async def test_one_persons_commands_are_answered_in_the_order_typed(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    texts = ["follow diffusion-models", "unfollow diffusion-models"] * 3 + ["list"]
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, CommandQueue()) as url,
        aiohttp.ClientSession() as http,
    ):
        for n, text in enumerate(texts):  # each acked before the work is done
            body = command_body(text, base=slack.base, n=n)
            await post(http, url, body, signed_headers(body))
        answers = [json.dumps(await slack.next_response()) for _ in texts]
    for answer, text in zip(answers, texts, strict=True):
        expected = {"follow": "now follows", "unfollow": "no longer follows", "list": "nothing yet"}
        assert expected[text.split()[0]] in answer, (text, answer)
    assert await count_rows(sessions, "subscription") == 0


async def test_a_replay_sent_to_another_process_acts_once(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, CommandQueue()) as first,
        papertide(sessions, slack, CommandQueue()) as second,
        aiohttp.ClientSession() as http,
    ):
        body = command_body('alert add au:"Yi Wu"', base=slack.base)
        headers = signed_headers(body)  # captured once, replayed to the other process
        await post(http, first, body, headers)
        await slack.next_response()
        await post(http, second, body, headers)
        await post(http, second, body, headers)  # and again: its own memory refuses it
        # A later command from the same person is answered after the replays' turn.
        later = command_body("alerts", base=slack.base)
        await post(http, second, later, signed_headers(later))
        assert "Yi Wu" in json.dumps(await slack.next_response())
        assert slack.responses == []  # the replays got no answer
    assert await count_rows(sessions, "alert") == 1
    assert await count_rows(sessions, "processed_event") >= 2
