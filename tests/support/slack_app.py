"""papertide's Slack routes on a local server, for tests that stand Slack's Web API in
with a local server: one way to build them, so every Slack test runs the same wiring."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import CommandDeps
from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.platforms.slack.app import build_slack_app, install_slack_routes
from tests.support.servers import SIGNING_SECRET, serve

FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@asynccontextmanager
async def slack_routes(
    sessions: async_sessionmaker[AsyncSession],
    api_base: str,
    work: CommandWork,
    deps: CommandDeps,
) -> AsyncIterator[str]:
    """Serve papertide's Slack routes, talking to the Web API at `api_base`; yield the URL."""
    settings = Settings(
        slack_bot_token="xoxb-test",
        slack_signing_secret=SIGNING_SECRET,
        slack_api_url=f"{api_base}/api/",
    )
    bolt = build_slack_app(settings=settings, sessions=sessions, deps=deps, work=work)
    app = web.Application()
    install_slack_routes(
        app, bolt, signing_secret=SIGNING_SECRET, sessions=sessions, commands=work.queue
    )
    async with serve(app) as url:
        yield url
