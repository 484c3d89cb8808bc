"""`POST /slack/events`: verify first, then parse, then refuse replays, then hand to Bolt.

Everything Slack sends (slash commands, button clicks, events) arrives here. The order
matters: the signature (HMAC-SHA256 over `v0:<timestamp>:<raw body>` with the signing
secret, timestamp within five minutes) is checked on the raw bytes BEFORE anything is
decoded or parsed, so unsigned junk costs one HMAC and gets a 401 with one log line;
a signed body that is not UTF-8 or whose JSON does not parse gets a 400. Never a 500.

A signed request is valid for five minutes, so whoever captures one could replay it;
the first delivery claims a digest of its body in the `processed_event` table and a
replay is answered 200 without acting (every real Slack request differs: its body has
a fresh trigger_id, action_ts or event_id, and Slack's own event retries are exactly
the repeats to drop).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.events import claim_event, forget_events
from bot.timeutil import utcnow
from bot.types import Platform

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
MAX_SKEW_SECONDS = 300
# Remembered bodies and event ids older than this are forgotten (the signature window
# is five minutes; Slack retries an event for about an hour).
FORGET_AFTER = timedelta(days=1)
FORGET_EVERY = 1000  # requests


class Refused(Exception):
    """A request we answer with `status` and one log line (`reason`)."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def verify_signature(
    secret: str, headers: Any, body: bytes, *, now: Callable[[], float] = time.time
) -> None:
    """Raise Refused(401) unless Slack signed exactly this body within five minutes."""
    stamp = str(headers.get("X-Slack-Request-Timestamp", ""))
    signature = str(headers.get("X-Slack-Signature", ""))
    if not stamp or not signature:
        raise Refused(401, "unsigned")
    if not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
        raise Refused(401, "bad timestamp")
    if abs(now() - int(stamp)) > MAX_SKEW_SECONDS:
        raise Refused(401, "stale timestamp")
    expected = "v0=" + hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body,
                                hashlib.sha256).hexdigest()  # fmt: skip
    if not hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace")):
        raise Refused(401, "bad signature")


def check_body(content_type: str, body: bytes) -> str:
    """The body as text once it is known to parse the way Bolt will read it; else 400."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(400, "body is not UTF-8") from exc
    try:
        if content_type == "application/json":
            document: Any = json.loads(text)
        else:
            form = parse_qs(text, keep_blank_values=True)
            payload = form.get("payload")
            document = json.loads(payload[0]) if payload else {}
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise Refused(400, f"body does not parse: {type(exc).__name__}") from exc
    if not isinstance(document, dict):
        raise Refused(400, "body is not an object")
    return text


def install_slack_routes(
    web_app: web.Application,
    bolt_app: AsyncApp,
    *,
    signing_secret: str,
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    """Add `POST /slack/events` (commands, interactivity and events share it) to the web app."""
    seen = 0

    async def first_time(body: bytes) -> bool:
        nonlocal seen
        seen += 1
        digest = "req:" + hashlib.sha256(body).hexdigest()
        async with sessions() as session, session.begin():
            if seen % FORGET_EVERY == 0:
                await forget_events(session=session, before=utcnow() - FORGET_AFTER)
            return await claim_event(session=session, platform=Platform.SLACK, event_id=digest)

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            verify_signature(signing_secret, request.headers, body)
            text = check_body(request.content_type, body)
        except Refused as refused:
            log.warning(
                "slack.request_refused",
                extra={"status": refused.status, "reason": refused.reason, "bytes": len(body)},
            )
            return web.Response(status=refused.status, text=refused.reason + "\n")
        if not await first_time(body):
            log.warning("slack.replay_ignored", extra={"bytes": len(body)})
            return web.Response(status=200, text="")
        bolt_request = AsyncBoltRequest(
            body=text,
            query=request.query_string,
            headers=request.headers,  # type: ignore[arg-type]
        )
        return await to_aiohttp_response(await bolt_app.async_dispatch(bolt_request))

    web_app.router.add_post(EVENTS_PATH, handle)
