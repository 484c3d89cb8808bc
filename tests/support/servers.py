"""Real local HTTP servers for the Slack tests: a Web API stand-in and papertide's routes."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

SIGNING_SECRET = "test-signing-secret"
# Slack gives every command and click its own trigger_id, so no two real bodies repeat.
_TRIGGERS = itertools.count(1)


@dataclass
class FakeSlack:
    """Stands in for slack.com/api and for response_url; records every call."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    responses: list[dict[str, Any]] = field(default_factory=list)
    # chat.postMessage answers, consumed in order; default {"ok": true}
    post_results: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    bot_channels: set[str] = field(default_factory=lambda: {"C1", "C2"})
    base: str = ""
    arrived: asyncio.Event = field(default_factory=asyncio.Event)
    ts: int = 0

    def posted(self) -> list[dict[str, Any]]:
        return [args for name, args in self.calls if name == "chat.postMessage"]

    async def next_response(self, wait: float = 10.0) -> dict[str, Any]:
        """Wait until the app answered through response_url."""
        async with asyncio.timeout(wait):
            while not self.responses:
                self.arrived.clear()
                await self.arrived.wait()
        return self.responses.pop(0)

    async def api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if request.method == "GET":
            args: dict[str, Any] = dict(request.query)
        elif request.content_type == "application/json":
            args = await request.json()
        else:
            args = dict(await request.post())
        self.calls.append((method, args))
        if method == "auth.test":
            return web.json_response(
                {"ok": True, "team_id": "T1", "user_id": "UBOT", "bot_id": "B1"}
            )
        if method == "conversations.info":
            channel = args.get("channel", "")
            if channel not in self.bot_channels and channel.startswith("G"):
                return web.json_response({"ok": False, "error": "channel_not_found"})
            return web.json_response(
                {"ok": True, "channel": {"id": channel, "is_member": channel in self.bot_channels}}
            )
        if method == "chat.postMessage":
            if self.post_results:
                status, body, headers = self.post_results.pop(0)
                return web.json_response(body, status=status, headers=headers)
            self.ts += 1
            return web.json_response(
                {"ok": True, "ts": f"1700000000.{self.ts:06d}", "channel": args.get("channel")}
            )
        return web.json_response({"ok": True})

    async def response_url(self, request: web.Request) -> web.Response:
        self.responses.append(await request.json())
        self.arrived.set()
        return web.Response(text="ok")


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Run an aiohttp app on 127.0.0.1, a free port; yield its base URL."""
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    app = web.Application()
    app.router.add_route("*", "/api/{method}", fake.api)
    app.router.add_post("/response/{n}", fake.response_url)
    async with serve(app) as base:
        fake.base = base
        yield fake


def signed_headers(
    body: str | bytes, *, secret: str = SIGNING_SECRET, ts: int | None = None
) -> dict[str, str]:
    """Headers as Slack signs a request: v0=HMAC-SHA256(secret, 'v0:{ts}:{body}')."""
    stamp = str(int(time.time()) if ts is None else ts)
    raw = body.encode() if isinstance(body, str) else body
    digest = hmac.new(
        secret.encode(), b"v0:" + stamp.encode() + b":" + raw, hashlib.sha256
    ).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}"}


def command_body(
    text: str, *, base: str, team: str = "T1", channel: str = "C1", user: str = "U1", n: int = 1
) -> str:
    """A form-encoded slash command exactly as Slack posts it."""
    return urllib.parse.urlencode(
        {
            "token": "deprecated",
            "team_id": team,
            "team_domain": "acme",
            "channel_id": channel,
            "channel_name": "directmessage" if channel.startswith("D") else "research",
            "user_id": user,
            "user_name": "ann",
            "command": "/papers",
            "text": text,
            "api_app_id": "A1",
            "response_url": f"{base}/response/{n}",
            "trigger_id": f"1.2.{next(_TRIGGERS)}",
        }
    )


def action_body(
    action_id: str,
    value: str,
    *,
    base: str,
    team: str = "T1",
    channel: str = "C1",
    user: str = "U1",
) -> str:
    """A block_actions interactivity payload (form field `payload`, JSON inside)."""
    payload = {
        "type": "block_actions",
        "team": {"id": team, "domain": "acme"},
        "user": {"id": user, "team_id": team},
        "api_app_id": "A1",
        "channel": {"id": channel, "name": "research"},
        "container": {"type": "message", "channel_id": channel, "message_ts": "1.1"},
        "response_url": f"{base}/response/a",
        "trigger_id": f"1.2.{next(_TRIGGERS)}",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "value": value,
                "block_id": "b",
                "action_ts": "1",
            }
        ],
    }
    return urllib.parse.urlencode({"payload": json.dumps(payload)})
