"""`papertide poll --once` runs the scheduler's poll, fan-out included.

A channel follows a topic; `papertide worker` runs as its own process; `poll --once`
ingests the bundled sample in another process. The channel's alerts (more papers than
the group threshold per ingest batch, so one threaded group per batch) must reach the
channel's endpoint through the running worker, on SQLite and on PostgreSQL. Before the
composition root was one, `poll --once` recorded the matches without fan-out and
nothing was ever sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web
from sqlalchemy import func, select
from sqlmodel import col

from bot.catalog.lookup import find_topic
from bot.config import Settings
from bot.outbox.targets import get_or_create_target
from bot.service.root import open_papertide
from bot.store.models import PaperTopic
from bot.subscriptions.follows import follow_topic
from bot.types import Platform, TargetKind
from tests.support.paths import REPO

CLI = (sys.executable, "-c", "from bot.cli import main; main()")
TOPIC = "rl-for-llm-agents"


@contextlib.asynccontextmanager
async def endpoint() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    """A channel's webhook: records every message body it is sent."""
    received: list[dict[str, Any]] = []

    async def hook(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}/hook", received
    finally:
        await runner.cleanup()


async def test_poll_once_delivers_alerts_through_a_running_worker(
    db_url: str, tmp_path: Any
) -> None:
    env = {
        **os.environ,
        "PAPERTIDE_DATABASE_URL": db_url,
        "PAPERTIDE_SOURCES": "sample",
        "PAPERTIDE_CONSOLE_OUT": str(tmp_path / "console.out"),
    }
    async with endpoint() as (url, received):
        settings = Settings(database_url=db_url, sources=["sample"])
        async with open_papertide(settings, migrate=False) as root:
            await root.sync_catalog()
            async with root.store.sessions() as session, session.begin():
                channel = await get_or_create_target(
                    session=session, platform=Platform.WEBHOOK, workspace="lab", address=url,
                    kind=TargetKind.CHANNEL,
                )  # fmt: skip
                topic = await find_topic(session=session, text=TOPIC)
                await follow_topic(session=session, target=channel, topic=topic)
        log = (tmp_path / "worker.log").open("w")
        worker = await asyncio.create_subprocess_exec(
            *CLI, "worker", cwd=REPO, env=env, stdout=log, stderr=log
        )
        try:
            poll = await asyncio.create_subprocess_exec(
                *CLI, "poll", "--once", cwd=REPO, env=env,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )  # fmt: skip
            out, _ = await poll.communicate()
            assert poll.returncode == 0, out.decode()
            for _ in range(300):  # the worker claims what the poll enqueued
                if len(received) >= 2:
                    break
                await asyncio.sleep(0.1)
            await asyncio.sleep(0.5)  # nothing more may arrive
        finally:
            worker.send_signal(signal.SIGTERM)
            await asyncio.wait_for(worker.wait(), 30)
        async with open_papertide(settings, migrate=False) as root, root.store.sessions() as s:
            filed = await s.scalar(
                select(func.count())
                .select_from(PaperTopic)
                .where(col(PaperTopic.topic_id) == topic.id)
            )
    assert filed
    assert filed > settings.group_threshold
    # The sample arrives in two batches of up to 500 papers: one thread per batch.
    assert [body["kind"] for body in received] == ["paper_group", "paper_group"]
    items = [item for body in received for item in body["payload"]["items"]]
    ids = [item["paper"]["id"] for item in items]
    assert len(ids) == len(set(ids)) == filed  # every paper of the topic, once
    assert {r["slug"] for item in items for r in item["reasons"]} == {TOPIC}
    assert worker.returncode == 0
