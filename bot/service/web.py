"""The web server as a service piece: the app built over the root's store, served until stop."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from aiohttp import web

from bot.platforms.registry import RouteInstaller
from bot.service.chat_deps import topic_momentum
from bot.timeutil import utcnow
from bot.web.app import build_web_app, serve_web

if TYPE_CHECKING:
    from bot.service.root import Papertide


def web_app(
    root: Papertide,
    routes: Sequence[RouteInstaller] = (),
    *,
    clock: Callable[[], datetime] = utcnow,
    page_cache_seconds: float = 30.0,
) -> web.Application:
    """Topic pages, email flows, /healthz and /metrics, plus the chat apps' routes."""

    def leader_state() -> str:
        # No Leadership: this process runs no scheduler (a test, or the web app alone).
        return str(root.leader.state()["role"]) if root.leader is not None else "single-process"

    return build_web_app(
        settings=root.settings,
        store=root.store,
        momentum=topic_momentum(root.settings),
        extra_routes=routes,
        leader_state=leader_state,
        clock=clock,
        page_cache_seconds=page_cache_seconds,
    )


async def serve_web_until(
    root: Papertide,
    host: str,
    port: int,
    routes: Sequence[RouteInstaller],
    stop: asyncio.Event,
) -> None:
    runner = await serve_web(web_app(root, routes), host, port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
