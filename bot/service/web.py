"""The web server as a service piece: served until `stop`, then cleaned up."""

from __future__ import annotations

import asyncio

from aiohttp import web

from bot.web.app import serve_web


async def serve_web_until(app: web.Application, host: str, port: int, stop: asyncio.Event) -> None:
    runner = await serve_web(app, host, port)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
