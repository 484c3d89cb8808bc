"""The Slack rig: papertide's Slack routes on a local server, a local Slack API stand-in."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.queue import CommandWork
from tests.support.chat import add_topics, make_deps
from tests.support.servers import (
    FakeSlack,
    command_body,
    fake_slack,
    signed_headers,
)
from tests.support.slack_app import FORM, slack_routes


@dataclass
class Rig:
    url: str
    slack: FakeSlack
    http: aiohttp.ClientSession

    async def post(
        self, body: str, *, headers: dict[str, str] | None = None, json_body: bool = False
    ) -> int:
        kind = {"Content-Type": "application/json"} if json_body else FORM
        async with self.http.post(
            f"{self.url}/slack/events",
            data=body,
            headers={**kind, **(headers or signed_headers(body))},
        ) as resp:
            return resp.status

    async def command(self, text: str, **kw: str) -> dict[str, object]:
        assert await self.post(command_body(text, base=self.slack.base, **kw)) == 200
        return await self.slack.next_response()


@pytest.fixture
async def rig(
    sessions: async_sessionmaker[AsyncSession], command_work: CommandWork
) -> AsyncIterator[Rig]:
    await add_topics(sessions)
    async with fake_slack() as slack:
        routes = slack_routes(sessions, slack.base, command_work, make_deps())
        async with routes as url, aiohttp.ClientSession() as http:
            yield Rig(url=url, slack=slack, http=http)
