"""Discord delivery: message bodies (bot.platforms.discord.render) → POST /channels/{id}/messages.

Why httpx and not discord.py's HTTPClient: its base URL is the class constant
`discord.http.Route.BASE` (no per-client setting), and its `request()` sleeps and
retries by itself on 429 (up to `max_ratelimit_timeout`, at least 30 s) and on 5xx; the
outbox owns retries and pacing, so a channel must return Retry(after) instead. This thin
REST client honours `PAPERTIDE_DISCORD_API_URL` and never sleeps.

A PAPER_GROUP / QUIET_SUMMARY becomes several messages that together carry every paper;
progress is saved after each message exactly as the Slack channel does.
"""

from __future__ import annotations

import logging

import httpx

from bot.config import Settings
from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry, SaveProgress
from bot.platforms.discord.render import GONE_CODES, to_payloads
from bot.types import OutboundMessage, Platform, TargetKind

log = logging.getLogger(__name__)


def _result_for(response: httpx.Response) -> DeliveryResult:
    try:
        data = response.json()
    except ValueError:
        data = {}
    data = data if isinstance(data, dict) else {}
    code = int(data.get("code", 0) or 0)
    reason = f"http_{response.status_code}" + (f" code {code}" if code else "")
    if response.status_code == 429:
        after = data.get("retry_after") or response.headers.get("Retry-After")
        return Retry(reason="ratelimited", after=float(after) if after else None)
    if code in GONE_CODES or response.status_code == 404:
        return Failed(reason=reason, disable_target=True)
    if response.status_code >= 500:
        return Retry(reason=reason)
    return Failed(reason=reason)


class DiscordChannel:
    """Sends outbox messages to Discord channels and users (DMs) over the REST API."""

    platform = Platform.DISCORD

    def __init__(
        self, client: httpx.AsyncClient, *, save_progress: SaveProgress | None = None
    ) -> None:
        self._client = client
        self._save_progress = save_progress

    @classmethod
    def from_settings(
        cls, settings: Settings, *, save_progress: SaveProgress | None = None
    ) -> DiscordChannel:
        """A channel on its own httpx client at PAPERTIDE_DISCORD_API_URL with the bot token."""
        token = settings.discord_token.get_secret_value() if settings.discord_token else ""
        client = httpx.AsyncClient(
            base_url=settings.discord_api_url.rstrip("/") + "/",
            headers={"Authorization": f"Bot {token}", "User-Agent": settings.user_agent},
            timeout=settings.http_timeout_seconds,
        )
        return cls(client, save_progress=save_progress)

    async def _channel_id(self, message: OutboundMessage) -> str | DeliveryResult:
        if message.target.kind != TargetKind.USER:
            return message.target.address
        response = await self._client.post(
            "users/@me/channels", json={"recipient_id": message.target.address}
        )
        if response.status_code >= 300:
            return _result_for(response)
        return str(response.json()["id"])

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        """Post the message (or the rest of a group); never raises for delivery problems."""
        bodies = to_payloads(message.kind, message.payload)
        sent = int(dict(message.payload.get("_progress", {})).get("sent", 0))
        first_id: str | None = None
        try:
            channel = await self._channel_id(message)
            if not isinstance(channel, str):
                return channel
            for index in range(sent, len(bodies)):
                response = await self._client.post(
                    f"channels/{channel}/messages", json=bodies[index]
                )
                if response.status_code >= 300:
                    result = _result_for(response)
                    log.warning(
                        "discord.send_failed",
                        extra={"message_id": message.id, "result": repr(result)},
                    )
                    return result
                first_id = first_id or str(response.json().get("id", ""))
                if len(bodies) > 1 and self._save_progress is not None:
                    await self._save_progress(message.id, {"sent": index + 1})
        except httpx.TransportError as exc:
            return Retry(reason=f"network: {type(exc).__name__}")
        return Delivered(remote_id=first_id)
