"""Slack delivery: Block Kit messages (bot.platforms.slack.render) → chat.postMessage.

A PAPER is one message. A PAPER_GROUP or QUIET_SUMMARY is one parent message plus
thread replies that together carry EVERY paper (never "and 12 more"). Retries are
idempotent per step: after each post the channel records `{"parent_ts", "sent"}` under
`payload["_progress"]` of the outbox row (through the injected `save_progress`), and a
retried row resumes after the last message Slack accepted. A crash between a post and
its record can repeat that one message (at-least-once), never skip one.
"""

from __future__ import annotations

import asyncio
import logging

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.config import Settings
from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry, SaveProgress
from bot.platforms.slack.render import to_messages
from bot.types import OutboundMessage, Platform

log = logging.getLogger(__name__)

# The target itself is gone or we lost access: stop sending there.
GONE_ERRORS = {
    "channel_not_found",
    "is_archived",
    "not_in_channel",
    "account_inactive",
    "invalid_auth",
    "token_revoked",
    "user_not_found",
    "user_disabled",
    "cannot_dm_bot",
    "team_access_not_granted",
}


def slack_error(exc: SlackApiError) -> str:
    """The `error` code of a failed call; `http_<status>` when the body was not JSON."""
    data = exc.response.data
    code = data.get("error") if isinstance(data, dict) else None
    return str(code or f"http_{exc.response.status_code}")


def _result_for(exc: SlackApiError) -> DeliveryResult:
    status = exc.response.status_code
    error = slack_error(exc)
    if status == 429 or error == "ratelimited":
        after = exc.response.headers.get("Retry-After") or exc.response.headers.get("retry-after")
        return Retry(reason="ratelimited", after=float(after) if after else None)
    if error in GONE_ERRORS:
        return Failed(reason=error, disable_target=True)
    if status >= 500 or error in (
        "internal_error",
        "fatal_error",
        "service_unavailable",
        "request_timeout",
    ):
        return Retry(reason=error)
    return Failed(reason=error)


class SlackChannel:
    """Sends outbox messages to Slack channels and users (DMs) through the Web API."""

    platform = Platform.SLACK

    def __init__(
        self, client: AsyncWebClient, *, save_progress: SaveProgress | None = None
    ) -> None:
        self._client = client
        self._save_progress = save_progress

    @classmethod
    def from_settings(
        cls, settings: Settings, *, save_progress: SaveProgress | None = None
    ) -> SlackChannel:
        """A channel on its own client: SDK retries off (the outbox owns retries)."""
        token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
        client = AsyncWebClient(
            token=token,
            base_url=settings.slack_api_url,
            timeout=int(settings.http_timeout_seconds),
            retry_handlers=[],
        )
        return cls(client, save_progress=save_progress)

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        """Post the message (or the rest of a group); never raises for delivery problems."""
        messages = to_messages(message.kind, message.payload, message.target.kind)
        progress = dict(message.payload.get("_progress", {}))
        sent = int(progress.get("sent", 0))
        parent_ts = progress.get("parent_ts")
        try:
            for index in range(sent, len(messages)):
                extra = {"thread_ts": parent_ts} if index > 0 and parent_ts else {}
                response = await self._client.chat_postMessage(
                    channel=message.target.address,
                    unfurl_links=False,
                    unfurl_media=False,
                    **messages[index],
                    **extra,
                )
                if index == 0:
                    parent_ts = str(response.get("ts", ""))
                progress = {"parent_ts": parent_ts, "sent": index + 1}
                if len(messages) > 1 and self._save_progress is not None:
                    await self._save_progress(message.id, progress)
        except SlackApiError as exc:
            result = _result_for(exc)
            log.warning(
                "slack.send_failed", extra={"message_id": message.id, "result": repr(result)}
            )
            return result
        except (TimeoutError, aiohttp.ClientError, asyncio.CancelledError) as exc:
            if isinstance(exc, asyncio.CancelledError):
                raise
            return Retry(reason=f"network: {type(exc).__name__}")
        return Delivered(remote_id=parent_ts)
