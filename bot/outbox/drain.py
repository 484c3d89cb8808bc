"""One-shot delivery: run a worker until nothing due is left (the demo, tests, bench)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.config import Settings
from bot.outbox.channel import Channel
from bot.outbox.worker import Worker
from bot.store.models import OutboxRow, Target
from bot.timeutil import utcnow
from bot.types import OutboxStatus, Platform


async def deliver_until_idle(
    *,
    sessions: async_sessionmaker[AsyncSession],
    settings: Settings,
    channels: Mapping[Platform, Channel],
    limit_seconds: float = 60.0,
) -> int:
    """Run one worker until no due row is left for these channels; returns rows sent.

    For one-shot runs (`papertide demo`, tests): the long-running service uses `Worker.run`.
    """
    platforms = [str(p) for p in channels]
    due_stmt = (
        select(func.count())
        .select_from(OutboxRow)
        .join(Target, col(Target.id) == col(OutboxRow.target_id))
        .where(
            col(OutboxRow.status).in_((OutboxStatus.PENDING, OutboxStatus.SENDING)),
            col(Target.platform).in_(platforms),
        )
    )
    sent_stmt = select(func.count()).where(col(OutboxRow.status) == OutboxStatus.SENT)

    async def count(stmt: Any) -> int:
        async with sessions() as session:
            return int((await session.execute(stmt)).scalar_one())

    before = await count(sent_stmt)
    stop = asyncio.Event()
    worker = Worker(sessions=sessions, channels=channels, settings=settings)
    task = asyncio.create_task(worker.run(stop))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_seconds
    try:
        # Polling the store: the rows' state lives there, not in any event we could await.
        while loop.time() < deadline and await count(  # noqa: ASYNC110
            due_stmt.where(col(OutboxRow.next_attempt_at) <= utcnow())
        ):
            await asyncio.sleep(0.1)
    finally:
        stop.set()
        await task
    return await count(sent_stmt) - before
