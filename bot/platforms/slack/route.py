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

Slash commands, the busy path, claim their digest later: in the transaction of the
command's own work (the app's command queue), so the ack never waits for a database
write (on SQLite, for the one write lock). A replay is still acked 200 and never acts:
its work finds the digest taken and stops. A digest seen by this process in the last
minutes is refused at once, before it costs a queue slot.

When the command queue would refuse a slash command, the "busy, try again" ack is
answered here, after the signature, the parse and the replay check but before Bolt's
dispatch: under a flood most commands are refused, and each refusal that skips Bolt
leaves that much more CPU to the commands being answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections import OrderedDict
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
from bot.chat.queue import BUSY, CommandQueue, person_key
from bot.timeutil import utcnow
from bot.types import Platform

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
MAX_SKEW_SECONDS = 300
# Remembered bodies and event ids older than this are forgotten (the signature window
# is five minutes; Slack retries an event for about an hour).
FORGET_AFTER = timedelta(days=1)
FORGET_EVERY = 1000  # requests
# The Bolt request context key under which a slash command carries its body's digest.
REQUEST_DIGEST = "papertide_request_digest"
RECENT_DIGESTS = 20_000  # remembered in memory: the fast path against replays
# The ack `ack(text=BUSY, response_type="ephemeral")` gives, byte for byte.
BUSY_ACK = json.dumps({"text": BUSY, "response_type": "ephemeral"})


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


def check_body(content_type: str, body: bytes) -> tuple[str, str | None]:
    """The body as text once it is known to parse the way Bolt will read it, and for a
    slash command its sender's queue key (None for anything else); else 400."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Refused(400, "body is not UTF-8") from exc
    command: str | None = None
    try:
        if content_type == "application/json":
            document: Any = json.loads(text)
        else:
            form = parse_qs(text, keep_blank_values=True)
            payload = form.get("payload")
            document = json.loads(payload[0]) if payload else {}
            if not payload and "command" in form:
                team, user = form.get("team_id", [""])[0], form.get("user_id", [""])[0]
                command = person_key(team, user)
    except (ValueError, RecursionError) as exc:  # RecursionError: absurdly deep nesting
        raise Refused(400, f"body does not parse: {type(exc).__name__}") from exc
    if not isinstance(document, dict):
        raise Refused(400, "body is not an object")
    return text, command


class RecentDigests:
    """The last `size` request digests this process saw, oldest forgotten first."""

    def __init__(self, size: int = RECENT_DIGESTS) -> None:
        self._size = size
        self._seen: OrderedDict[str, None] = OrderedDict()

    def first_time(self, digest: str) -> bool:
        if digest in self._seen:
            return False
        self._seen[digest] = None
        if len(self._seen) > self._size:
            self._seen.popitem(last=False)
        return True


def install_slack_routes(
    web_app: web.Application,
    bolt_app: AsyncApp,
    *,
    signing_secret: str,
    sessions: async_sessionmaker[AsyncSession],
    commands: CommandQueue | None = None,
) -> None:
    """Add `POST /slack/events` (commands, interactivity and events share it) to the web app;
    `commands`: the queue the app's slash commands go to (a full one is answered here)."""
    seen = 0
    recent = RecentDigests()
    chores: set[asyncio.Task[None]] = set()

    async def forget() -> None:
        try:
            async with sessions() as session, session.begin():
                await forget_events(session=session, before=utcnow() - FORGET_AFTER)
        except Exception:
            log.exception("slack.forget_failed")

    async def first_time(digest: str) -> bool:
        async with sessions() as session, session.begin():
            return await claim_event(session=session, platform=Platform.SLACK, event_id=digest)

    async def handle(request: web.Request) -> web.Response:
        nonlocal seen
        body = await request.read()
        try:
            verify_signature(signing_secret, request.headers, body)
            text, command = check_body(request.content_type, body)
        except Refused as refused:
            log.warning(
                "slack.request_refused",
                extra={"status": refused.status, "reason": refused.reason, "bytes": len(body)},
            )
            return web.Response(status=refused.status, text=refused.reason + "\n")
        digest = "req:" + hashlib.sha256(body).hexdigest()
        seen += 1
        if seen % FORGET_EVERY == 0:  # off the ack path; a failure only delays forgetting
            chores.add(task := asyncio.create_task(forget()))
            task.add_done_callback(chores.discard)
        # A command's digest is claimed in the transaction of its work (see above).
        if not recent.first_time(digest) or (not command and not await first_time(digest)):
            log.warning("slack.replay_ignored", extra={"bytes": len(body)})
            return web.Response(status=200, text="")
        if command is not None and commands is not None and commands.refuses(command):
            return web.Response(text=BUSY_ACK, content_type="application/json", charset="utf-8")
        bolt_request = AsyncBoltRequest(
            body=text,
            query=request.query_string,
            headers=request.headers,  # type: ignore[arg-type]
            context={REQUEST_DIGEST: digest} if command is not None else None,
        )
        return await to_aiohttp_response(await bolt_app.async_dispatch(bolt_request))

    web_app.router.add_post(EVENTS_PATH, handle)
