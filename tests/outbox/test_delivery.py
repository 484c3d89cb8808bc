"""Workers delivering to a real local HTTP endpoint: 429, 5xx bursts, timeouts, gone targets."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from aiohttp import web
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.outbox.pacing import Pacer, SharedPacer
from bot.outbox.queue import enqueue, message_key
from bot.outbox.worker import Worker
from bot.platforms.console import ConsoleChannel
from bot.platforms.transport import AiohttpTransport
from bot.platforms.webhook import WebhookChannel, parse_retry_after
from bot.store.models import OutboxRow, Target
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef


@dataclass
class Endpoint:
    """A local HTTP server whose paths misbehave on purpose; records every request."""

    url: str = ""
    hits: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))


@pytest.fixture
async def endpoint() -> AsyncIterator[Endpoint]:
    ep = Endpoint()

    async def handle(request: web.Request) -> web.Response:
        path = request.match_info["path"]
        body = await request.json()
        ep.hits[path].append((time.monotonic(), body["key"]))
        n = len(ep.hits[path])
        if path == "ratelimited" and n == 1:
            return web.Response(status=429, headers={"Retry-After": "1"})
        if path == "flaky" and n <= 3:
            return web.Response(status=503)
        if path == "slow":
            await asyncio.sleep(1.0)
        if path == "gone":
            return web.json_response({"ok": False, "error": "channel_not_found"}, status=404)
        if path == "bad":
            return web.Response(status=400)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_post("/{path}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    ep.url = f"http://127.0.0.1:{port}"
    yield ep
    await runner.cleanup()


async def _targets_with_messages(sessions, base: str, per_target: dict[str, int]) -> dict[str, int]:  # type: ignore[no-untyped-def]
    ids = {}
    async with sessions() as session, session.begin():
        for path, n in per_target.items():
            target = Target(platform="webhook", kind="channel", address=f"{base}/{path}")
            session.add(target)
            await session.flush()
            assert target.id is not None
            ids[path] = target.id
            for i in range(n):
                await enqueue(
                    session=session,
                    target_id=target.id,
                    kind=MessageKind.PAPER,
                    key=message_key(target.id, MessageKind.PAPER, f"{path}-{i}"),
                    payload={"paper": {"id": f"{path}-{i}"}, "reasons": []},
                )
    return ids


async def _run_until_settled(worker: Worker, sessions) -> list[OutboxRow]:  # type: ignore[no-untyped-def]
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    deadline = time.monotonic() + 20.0
    try:
        while time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            async with sessions() as session:
                rows = list((await session.execute(select(OutboxRow))).scalars())
            if all(r.status in ("sent", "dead") for r in rows):
                return rows
        raise AssertionError(f"not settled: {sorted((r.key, r.status) for r in rows)}")
    finally:
        stop.set()
        await task


@pytest.mark.parametrize("engine_name", ["httpcore", "aiohttp", "aiohttp direct"])
async def test_worker_retries_honours_retry_after_dead_letters_and_disables(
    sessions,  # type: ignore[no-untyped-def]
    settings: Settings,
    endpoint: Endpoint,
    engine_name: str,
) -> None:
    # Concurrency 1: the gone target's later rows are not already in flight when it 404s.
    settings = settings.model_copy(update={"outbox_max_attempts": 3, "worker_concurrency": 1})
    ids = await _targets_with_messages(
        sessions,
        endpoint.url,
        {"ok": 5, "ratelimited": 1, "flaky": 1, "slow": 1, "gone": 3, "bad": 1},
    )
    # Both HTTP engines behind the httpx API: httpcore (default) and the workers' aiohttp
    # one; and the aiohttp one posted to directly, as the root wires the webhook channel.
    transport = AiohttpTransport() if engine_name.startswith("aiohttp") else None
    direct = transport if engine_name == "aiohttp direct" else None
    async with httpx.AsyncClient(timeout=0.3, transport=transport) as http:
        worker = Worker(
            sessions=sessions,
            channels={Platform.WEBHOOK: WebhookChannel(http, direct)},
            settings=settings,
            backoff=lambda attempt: 0.05,
            idle_seconds=0.05,
        )
        rows = await _run_until_settled(worker, sessions)
    by_target: dict[int, list[OutboxRow]] = defaultdict(list)
    for row in rows:
        by_target[row.target_id].append(row)

    assert {r.status for r in by_target[ids["ok"]]} == {"sent"}
    # 429 + Retry-After: 1 -> sent on the second try, not a moment before the second passed.
    [limited] = by_target[ids["ratelimited"]]
    assert limited.status == "sent"
    (t1, _), (t2, _) = endpoint.hits["ratelimited"]
    assert t2 - t1 >= 0.95
    # A burst of 503s outlasting the attempt budget: dead after exactly 3 requests.
    [flaky] = by_target[ids["flaky"]]
    assert flaky.status == "dead"
    assert flaky.last_error == "gave up after 3 attempts: webhook answered HTTP 503"
    assert len(endpoint.hits["flaky"]) == 3
    # Timeouts are retried, then dead.
    [slow] = by_target[ids["slow"]]
    assert (slow.status, slow.attempts) == ("dead", 3)
    assert "timed out" in (slow.last_error or "")
    # 404 "channel not found": the target is disabled after ONE request, its queue buried.
    assert {r.status for r in by_target[ids["gone"]]} == {"dead"}
    assert len(endpoint.hits["gone"]) == 1
    # Other 4xx: dead at once, the target stays enabled.
    [bad] = by_target[ids["bad"]]
    assert (bad.status, bad.attempts) == ("dead", 1)
    async with sessions() as session:
        gone = await session.get(Target, ids["gone"])
        bad_target = await session.get(Target, ids["bad"])
    assert gone is not None
    assert gone.disabled_at is not None
    assert gone.disabled_reason == "webhook answered HTTP 404"
    assert bad_target is not None
    assert bad_target.disabled_at is None


async def test_pacing_spaces_one_targets_messages_without_blocking_another(
    sqlite_url: str,
    tmp_path: Path,
    endpoint: Endpoint,
) -> None:
    from bot.store.engine import create_engine, session_factory

    engine = create_engine(sqlite_url)
    sessions = session_factory(engine)
    settings = Settings(database_url=sqlite_url, console_out=str(tmp_path / "c.out"))
    await _targets_with_messages(sessions, endpoint.url, {"busy": 6, "quiet": 1})
    # 4 messages/s per target; a 0.3 s horizon so most of "busy" is deferred, not slept on.
    pacer = Pacer({Platform.WEBHOOK: 4.0}, horizon=0.3)
    try:
        async with httpx.AsyncClient() as http:
            worker = Worker(
                sessions=sessions,
                channels={Platform.WEBHOOK: WebhookChannel(http)},
                settings=settings,
                pacer=pacer,
                idle_seconds=0.05,
            )
            rows = await _run_until_settled(worker, sessions)
    finally:
        await engine.dispose()
    assert {r.status for r in rows} == {"sent"}
    assert {r.attempts for r in rows} == {1}  # deferral is not an attempt
    busy = [t for t, _ in endpoint.hits["busy"]]
    assert len(busy) == 6
    # The pacer spaces the sends; the endpoint sees arrivals, which carry the loop's and
    # the network's jitter (one late arrival shortens the next gap). So: no gap near
    # what an unpaced burst would show, and the whole run no faster than the rate.
    gaps = [b - a for a, b in itertools.pairwise(busy)]
    assert min(gaps) >= 0.25 - 0.05
    assert busy[-1] - busy[0] >= 5 * 0.25 - 0.05  # never faster than the rate
    [(quiet_at, _)] = endpoint.hits["quiet"]
    assert quiet_at < busy[-1]  # the quiet target did not wait behind the busy one


async def test_pacer_reserves_slots_defers_beyond_the_horizon_and_honours_blocks() -> None:
    now = [100.0]
    pacer = Pacer({Platform.SLACK: 1.0}, horizon=2.0, clock=lambda: now[0])
    a = TargetRef(1, Platform.SLACK, TargetKind.CHANNEL, "T1", "C1")
    b = TargetRef(2, Platform.SLACK, TargetKind.CHANNEL, "T1", "C2")
    hook = TargetRef(3, Platform.WEBHOOK, TargetKind.CHANNEL, "", "http://x")
    waits = [pacer.reserve(a) for _ in range(5)]
    assert [(w.wait, w.defer) for w in waits[:3]] == [(0.0, False), (1.0, False), (2.0, False)]
    assert [w.defer for w in waits[3:]] == [True, True]
    assert waits[4].wait > waits[3].wait  # deferred rows come back spread out
    assert pacer.reserve(b).wait == 0.0  # another channel is not held up
    assert pacer.reserve(hook).wait == 0.0  # unpaced platform
    await pacer.block(hook, 30.0)
    assert pacer.reserve(hook).defer


def test_retry_after_header_forms() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 01 Jul 2026 12:00:30 GMT", now=_dt(2026, 7, 1, 12)) == 30.0


def _dt(*args: int):  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    return datetime(*args, tzinfo=UTC)


async def test_console_channel_writes_readable_text(tmp_path: Path) -> None:
    out = tmp_path / "console.out"
    channel = ConsoleChannel(str(out))
    message = OutboundMessage(
        id=7,
        key="t1:paper:2606.01234",
        kind=MessageKind.PAPER,
        target=TargetRef(1, Platform.CONSOLE, TargetKind.CHANNEL, "", "demo"),
        payload={
            "paper": {
                "title": "Agents that plan",
                "url": "https://arxiv.org/abs/2606.01234",
                "authors": [{"name": "Yi Wu"}],
            },
            "reasons": [
                {"kind": "topic", "slug": "rl", "name": "RL for LLM Agents", "terms": ["agent"]},
                {"kind": "alert", "query": 'abs:"tool use"', "terms": []},
            ],
        },
    )
    result = await channel.send(message)
    assert type(result).__name__ == "Delivered"
    text = out.read_text()
    assert "to console:demo [paper] #7" in text
    assert "* Agents that plan <https://arxiv.org/abs/2606.01234>" in text
    assert "why: topic RL for LLM Agents (matched: agent)" in text
    assert 'why: alert abs:"tool use"' in text


async def test_shared_pacers_hand_out_one_timeline_per_channel(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    """Two workers' pacers on one store: their slots for a channel never overlap."""
    rates = {Platform.SLACK: 2.0}  # one every 0.5 s
    first, second = SharedPacer(rates, sessions), SharedPacer(rates, sessions)
    channel = TargetRef(1, Platform.SLACK, TargetKind.CHANNEL, "T1", "C1")
    other = TargetRef(2, Platform.SLACK, TargetKind.CHANNEL, "T1", "C2")
    hook = TargetRef(3, Platform.WEBHOOK, TargetKind.CHANNEL, "", "http://x")
    waits, elsewhere = [], []
    for pacer in (first, second, first, second):
        async with sessions() as session, session.begin():
            [slot, beside, unpaced] = await pacer.reserve_all(session, [channel, other, hook])
        waits.append(slot.wait)
        elsewhere.append(beside.wait)
        assert not slot.defer
        assert unpaced.wait == 0.0
    # 0, 0.5, 1.0, 1.5 s from "now" (each reservation a few ms later than the last), for
    # each channel on its own timeline.
    for n, (wait, beside_wait) in enumerate(zip(waits, elsewhere, strict=True)):
        assert n * 0.5 - 0.2 <= wait <= n * 0.5, waits
        assert n * 0.5 - 0.2 <= beside_wait <= n * 0.5, elsewhere
    async with sessions() as session, session.begin():
        [_, later] = await first.reserve_all(session, [channel, channel])
    assert later.defer  # 2.5 s away, beyond the 2 s horizon: back to the queue
    await second.block(hook, 30.0)  # a Retry-After on an unpaced platform, seen by both
    async with sessions() as session, session.begin():
        [held] = await first.reserve_all(session, [hook])
    assert held.defer
    assert held.wait > 29
