"""Every fetch is bounded: bytes on the wire, bytes inflated, time, Retry-After, the limiter.

A real aiohttp server on loopback plays the hostile or unlucky server; the fetch must
fail with one line and keep its memory small (measured with tracemalloc around it).
"""

from __future__ import annotations

import asyncio
import gzip
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from bot.errors import SourceError
from bot.ingest.http import Fetched, HttpDeps, fetch
from tests.support.ingest import Canned, FakeSource, http_deps, running_source, source_settings

MIB = 1024 * 1024
CAP = 4 * MIB  # wire and inflated caps in these tests


@pytest.fixture
async def server() -> AsyncIterator[FakeSource]:
    async with running_source() as fake:
        yield fake


def _deps(server: FakeSource, **extra: Any) -> HttpDeps:
    values = {"fetch_max_bytes": CAP, "fetch_max_inflated_bytes": CAP} | extra
    return http_deps(source_settings("sqlite://", server, **values))


async def _peak_of(work: Callable[[], Awaitable[Any]]) -> tuple[BaseException | Any, int]:
    """Run `work`; return its result (or the exception it raised) and the traced peak bytes."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            outcome: BaseException | Any = await work()
        except Exception as exc:
            outcome = exc
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome, peak


def _gzip_bomb(inflated: int) -> bytes:
    """A gzip body of `inflated` zero bytes: 64 MiB members, one after the other."""
    member = gzip.compress(bytes(64 * MIB), compresslevel=9)
    return member * (inflated // (64 * MIB))


async def test_a_gzip_bomb_fails_its_fetch_with_one_line_and_little_memory(server) -> None:
    bomb = _gzip_bomb(1024 * MIB)  # about 1 MB that inflates to 1 GiB
    assert len(bomb) < 1.5 * MIB
    server.script("/bomb", Canned(body=bomb, headers={"Content-Encoding": "gzip"}))
    deps = _deps(server)
    try:
        error, peak = await _peak_of(lambda: fetch(deps, server.url("/bomb"), source="feed:x"))
    finally:
        await deps.client.aclose()
    assert isinstance(error, SourceError)
    assert "inflates to more than 4,194,304 bytes" in str(error)
    assert "\n" not in str(error)
    assert peak < 4 * CAP, f"peak {peak / MIB:.1f} MiB"


async def test_a_200_mb_plain_body_fails_its_fetch_with_little_memory(server) -> None:
    sent = 0

    async def endless(request: web.Request) -> web.StreamResponse:
        nonlocal sent
        response = web.StreamResponse(headers={"Content-Type": "application/rss+xml"})
        await response.prepare(request)
        chunk = b"<" * (256 * 1024)
        try:
            for _ in range(800):  # 200 MiB
                await response.write(chunk)
                sent += len(chunk)
        except (ConnectionResetError, RuntimeError):
            pass  # the client hung up: exactly what it should do
        return response

    server.handle("/huge", endless)
    deps = _deps(server)
    try:
        error, peak = await _peak_of(lambda: fetch(deps, server.url("/huge"), source="feed:x"))
    finally:
        await deps.client.aclose()
    assert isinstance(error, SourceError)
    assert "body larger than 4,194,304 bytes" in str(error)
    assert peak < 4 * CAP, f"peak {peak / MIB:.1f} MiB"
    assert sent < 100 * MIB  # the client stopped reading long before the end


async def test_a_body_labelled_gzip_that_is_not_fails_with_one_line(server) -> None:
    server.script("/liar", Canned(body=b"<rss>plain</rss>", headers={"Content-Encoding": "gzip"}))
    deps = _deps(server)
    try:
        with pytest.raises(SourceError, match="body labelled gzip is not gzip"):
            await fetch(deps, server.url("/liar"), source="feed:x")
    finally:
        await deps.client.aclose()


async def test_gzip_and_both_kinds_of_deflate_still_read(server) -> None:
    body = b"<rss>" + b"x" * 10_000 + b"</rss>"
    raw = zlib.compressobj(wbits=-15)
    server.script("/gz", Canned(body=gzip.compress(body), headers={"Content-Encoding": "gzip"}))
    server.script("/zl", Canned(body=zlib.compress(body), headers={"Content-Encoding": "deflate"}))
    server.script(
        "/raw",
        Canned(body=raw.compress(body) + raw.flush(), headers={"Content-Encoding": "deflate"}),
    )
    deps = _deps(server)
    try:
        for path in ("/gz", "/zl", "/raw"):
            got = await fetch(deps, server.url(path), source="feed:x")
            assert isinstance(got, Fetched)
            assert got.content == body, path
    finally:
        await deps.client.aclose()
    sent = server.requests[0][2]
    assert sent["Accept-Encoding"] == "gzip, deflate"  # only what we inflate within caps


async def test_a_server_trickling_bytes_cannot_keep_a_fetch_alive(server) -> None:
    async def trickle(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse()
        await response.prepare(request)
        try:
            while True:  # one byte every 0.2 s: no read ever times out
                await response.write(b"<")
                await asyncio.sleep(0.2)
        except (ConnectionResetError, RuntimeError):
            return response

    server.handle("/slow", trickle)
    deps = _deps(server, fetch_deadline_seconds=1.0)
    try:
        async with asyncio.timeout(30):  # the old fetch never ended
            with pytest.raises(SourceError, match=r"no complete answer within 1 s \(deadline\)"):
                await fetch(deps, server.url("/slow"), source="feed:x")
    finally:
        await deps.client.aclose()


async def test_a_huge_retry_after_fails_now_instead_of_sleeping(server) -> None:
    server.script("/busy", Canned(status=429, headers={"Retry-After": "3600"}))
    deps = _deps(server, retry_after_max_seconds=60)
    try:
        with pytest.raises(SourceError, match=r"HTTP 429 asks to retry after 3600 s \(cap 60 s\)"):
            await fetch(deps, server.url("/busy"), source="arxiv")
    finally:
        await deps.client.aclose()
    assert len(server.hits("/busy")) == 1  # no retry loop either


async def test_a_redirect_loop_is_one_line(server) -> None:
    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound(location="/loop")

    server.handle("/loop", loop)
    deps = _deps(server)
    try:
        with pytest.raises(SourceError, match="too many redirects"):
            await fetch(deps, server.url("/loop"), source="feed:x")
    finally:
        await deps.client.aclose()


async def test_the_shared_limiter_is_not_held_while_a_body_trickles(server) -> None:
    """A slow arXiv body must not starve the other arXiv source's request."""
    other_arrived = asyncio.Event()
    slow_started = asyncio.Event()

    async def slow_body(request: web.Request) -> web.StreamResponse:
        slow_started.set()
        response = web.StreamResponse()
        await response.prepare(request)  # headers now; the body waits for the other request
        await response.write(b"<feed>")
        while not other_arrived.is_set():  # a byte now and then: no read timeout saves it
            await response.write(b" ")
            await asyncio.sleep(0.2)
        await response.write(b"</feed>")
        return response

    async def quick(request: web.Request) -> web.Response:
        other_arrived.set()
        return web.Response(body=b"<feed/>")

    server.handle("/api/slow", slow_body)
    server.handle("/api/quick", quick)
    deps = _deps(server)
    limiter = deps.arxiv_limiter
    try:
        async with asyncio.timeout(20):  # with the limiter held across the body: a deadlock
            slow = asyncio.create_task(
                fetch(deps, server.url("/api/slow"), source="arxiv", limiter=limiter)
            )
            await slow_started.wait()
            quick_answer = await fetch(
                deps, server.url("/api/quick"), source="arxiv-rss", limiter=limiter
            )
            slow_answer = await slow
    finally:
        await deps.client.aclose()
    assert quick_answer.content == b"<feed/>"
    assert slow_answer.content.startswith(b"<feed> ")
    assert slow_answer.content.endswith(b" </feed>")
