"""The webhook channel posts the same request whichever way it goes: httpx on httpcore,
httpx on the aiohttp transport, or straight through that transport (the root's wiring)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping

import httpx
import pytest
from aiohttp import web

from bot.outbox.channel import Delivered, Failed, Retry
from bot.platforms.transport import AiohttpTransport
from bot.platforms.webhook import WebhookChannel
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef

ENGINES = ["httpcore", "aiohttp", "aiohttp direct"]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[str, list[tuple[bytes, Mapping[str, str]]]]]:
    """A local endpoint recording each body and its headers; /limited answers 429."""
    seen: list[tuple[bytes, Mapping[str, str]]] = []

    async def handle(request: web.Request) -> web.Response:
        seen.append((await request.read(), request.headers.copy()))
        if request.match_info["path"] == "limited":
            return web.Response(status=429, headers={"Retry-After": "7"})
        return web.Response(text="ok", headers={"X-Request-Id": "r-1"})

    app = web.Application()
    app.router.add_post("/{path}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    await runner.cleanup()


def _message(address: str) -> OutboundMessage:
    target = TargetRef(3, Platform.WEBHOOK, TargetKind.CHANNEL, "", address)
    payload = {"paper": {"title": "Ünïcode & <b>"}, "reasons": ["topic"]}
    return OutboundMessage(11, "t3:paper:2601.00001", MessageKind.PAPER, target, payload, 2)


async def _send(engine: str, message: OutboundMessage) -> object:
    transport = AiohttpTransport() if engine.startswith("aiohttp") else None
    direct = transport if engine == "aiohttp direct" else None
    async with httpx.AsyncClient(timeout=2.0, transport=transport) as http:
        return await WebhookChannel(http, direct).send(message)


@pytest.mark.parametrize("engine", ENGINES)
async def test_every_engine_posts_the_same_json_and_reads_the_answer(
    receiver: tuple[str, list[tuple[bytes, Mapping[str, str]]]], engine: str
) -> None:
    url, seen = receiver
    assert await _send(engine, _message(f"{url}/ok")) == Delivered("r-1")
    assert await _send(engine, _message(f"{url}/limited")) == Retry(
        "webhook answered HTTP 429", after=7.0
    )
    body, headers = seen[0]
    assert json.loads(body) == {
        "id": 11,
        "key": "t3:paper:2601.00001",
        "kind": "paper",
        "attempt": 2,
        "target": {"id": 3, "kind": "channel", "workspace": ""},
        "payload": {"paper": {"title": "Ünïcode & <b>"}, "reasons": ["topic"]},
    }
    assert "Ünïcode".encode() in body  # UTF-8, not \\u escapes, as httpx's json= sends
    assert headers["Idempotency-Key"] == "t3:paper:2601.00001"
    assert headers["Content-Type"] == "application/json"
    assert headers["Content-Length"] == str(len(body))


async def test_the_direct_post_sends_the_bytes_httpx_sends(
    receiver: tuple[str, list[tuple[bytes, Mapping[str, str]]]],
) -> None:
    url, seen = receiver
    for engine in ENGINES:
        await _send(engine, _message(f"{url}/ok"))
    assert len({body for body, _ in seen}) == 1


@pytest.mark.parametrize("engine", ENGINES)
async def test_unusable_addresses_disable_or_retry_alike(engine: str) -> None:
    gone = await _send(engine, _message("ftp://example.org/hook"))
    assert isinstance(gone, Failed)
    assert gone.disable_target
    # A closed port: the endpoint may come back, so the message waits.
    down = await _send(engine, _message("http://127.0.0.1:9/hook"))
    assert isinstance(down, Retry)
    assert down.reason.startswith("webhook unreachable")
