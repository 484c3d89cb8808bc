"""A database outage (issue 12, item 14): the worker backs off exponentially up to a cap,
logs once when the store goes and once when it is back, then delivers as before."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.outbox.outage import StoreHealth
from bot.outbox.queue import enqueue
from bot.outbox.targets import get_or_create_target
from bot.outbox.worker import Worker
from bot.platforms.webhook import WebhookChannel
from bot.store.engine import create_engine, session_factory
from bot.store.models import OutboxRow
from bot.types import MessageKind, Platform, TargetKind

# Nothing listens on port 1: every connection is refused at once, like a database that
# restarts or a network that drops.
UNREACHABLE = "postgresql://postgres@127.0.0.1:1/gone"


class Switch:
    """The worker's session factory (our own seam), pointed at a dead or a live store."""

    def __init__(self, dead: Callable[[], AsyncSession], live: Callable[[], AsyncSession]):
        self.dead, self.live, self.down, self.calls = dead, live, True, 0

    def __call__(self) -> AsyncSession:
        self.calls += 1
        return self.dead() if self.down else self.live()


class Recording(StoreHealth):
    """StoreHealth that remembers the delays it asked for."""

    def __init__(self, **kw: float) -> None:
        super().__init__(**kw)
        self.delays: list[float] = []
        self.twelve = asyncio.Event()

    def failed(self, where: str, exc: BaseException) -> float:
        delay = super().failed(where, exc)
        self.delays.append(delay)
        if len(self.delays) >= 12:
            self.twelve.set()
        return delay


async def test_an_outage_backs_off_logs_twice_and_recovers(
    sessions: async_sessionmaker[AsyncSession],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with sessions() as session, session.begin():
        hook = await get_or_create_target(
            session=session, platform=Platform.WEBHOOK, workspace="",
            address="http://127.0.0.1:9/never", kind=TargetKind.CHANNEL,
        )  # fmt: skip
        assert hook.id is not None
        await enqueue(
            session=session, target_id=hook.id, kind=MessageKind.PAPER, key="k1",
            payload={"paper": {"id": "1"}, "reasons": []},
        )  # fmt: skip
    dead_engine = create_engine(UNREACHABLE, pool_pre_ping=False)
    switch = Switch(session_factory(dead_engine), sessions)
    health = Recording(base=0.02, cap=0.16)
    sent: list[str] = []
    arrived = asyncio.Event()

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers["Idempotency-Key"])
        arrived.set()
        return httpx.Response(200)

    settings = Settings(console_out=str(tmp_path / "c.out"))
    stop = asyncio.Event()
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
        worker = Worker(
            sessions=switch,  # type: ignore[arg-type]
            channels={Platform.WEBHOOK: WebhookChannel(http)},
            settings=settings, idle_seconds=0.05, health=health,
        )  # fmt: skip
        with caplog.at_level(logging.INFO, logger="bot"):
            task = asyncio.create_task(worker.run(stop))
            async with asyncio.timeout(30):
                await health.twelve.wait()
            down_calls = switch.calls
            assert not worker.health.ok
            switch.down = False
            async with asyncio.timeout(30):
                await arrived.wait()
            stop.set()
            await task
    await dead_engine.dispose()

    # Exponential, then flat at the cap; never the old fixed 0.2 s spin.
    assert health.delays[:4] == [0.02, 0.04, 0.08, 0.16]
    assert set(health.delays[4:]) == {0.16}
    assert down_calls < 40  # the loops waited between tries
    lines = [r for r in caplog.records if r.name.startswith("bot.outbox")]
    gone = [r for r in lines if r.getMessage() == "worker.store_unreachable"]
    back = [r for r in lines if r.getMessage() == "worker.store_back"]
    assert len(gone) == 1  # once per change of state, not once per try
    assert len(back) == 1
    noisy = [r for r in lines if r.levelno >= logging.WARNING and r not in gone + back]
    assert noisy == []
    assert worker.health.ok
    assert sent == ["k1"]  # delivered once the store answered again
    async with sessions() as session:
        row = await session.get(OutboxRow, 1)
    assert row is not None
    assert row.status == "sent"
