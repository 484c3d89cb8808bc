"""`papertide status` shows a source whose poll stalled and one whose polls fail."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ingest.poll import run_poll
from bot.ingest.sources.base import SourceContext
from bot.ingest.sources.feed import FeedSource
from bot.ingest.status import collect_status, describe, stall_after
from bot.matching.engine import MatchEngine
from bot.timeutil import utcnow
from tests.support.ingest import Canned, http_deps, running_source, source_settings


async def test_a_poll_that_hangs_shows_as_stalled_then_a_failing_source_as_failing(
    db_url: str, sessions: async_sessionmaker[AsyncSession]
) -> None:
    arrived = asyncio.Event()

    async def hang(request: web.Request) -> web.StreamResponse:
        arrived.set()
        response = web.StreamResponse()
        await response.prepare(request)
        with contextlib.suppress(ConnectionResetError, RuntimeError):
            while True:
                await response.write(b" ")
                await asyncio.sleep(0.2)
        return response

    async with running_source() as server:
        server.handle("/hang.xml", hang)
        server.script("/gone.xml", Canned(status=404))
        settings = source_settings(db_url, server, fetch_deadline_seconds=600)
        http = http_deps(settings)
        hanging, gone = (f"feed:{server.url(p)}" for p in ("/hang.xml", "/gone.xml"))

        async def poll(name: str) -> object:
            source = FeedSource(name, SourceContext(settings, http, ()))
            return await run_poll(
                settings=settings, sessions=sessions, source_name=name, source=source,
                http=http, matcher=MatchEngine(),
            )  # fmt: skip

        task = asyncio.create_task(poll(hanging))
        try:
            await asyncio.wait_for(arrived.wait(), 30)
            after = stall_after(settings.fetch_deadline_seconds)
            async with sessions() as session:
                [running] = await collect_status(
                    session=session, names=[hanging], now=utcnow(), stalled_after=after
                )
                [stuck] = await collect_status(
                    session=session, names=[hanging], now=utcnow() + after + timedelta(seconds=1),
                    stalled_after=after,
                )  # fmt: skip
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await poll(gone)
        await http.client.aclose()
    assert after == timedelta(minutes=40)  # four whole-fetch deadlines
    assert running["polling_since"] is not None
    assert not running["stalled"]
    assert "polling since" in describe(running)
    assert stuck["stalled"]
    assert "STALLED: polling since" in describe(stuck)
    async with sessions() as session:
        rows = await collect_status(session=session, names=[gone], now=utcnow())
    failing = rows[0]
    assert failing["source"] == gone
    assert failing["failing"]
    assert failing["polling_since"] is None  # the failed poll ended
    line = describe(failing)
    assert "FAILING: 1 failed poll(s) in a row, last: " in line
    assert "HTTP 404" in line
