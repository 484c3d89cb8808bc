"""Apprise delivery: one outbox message → one or more notifications to the service
behind the target's Apprise URL (`target.address`).

Apprise's services speak `requests`, which blocks; `Apprise.async_notify` runs each
send in Apprise's own worker threads, so the event loop never waits on a socket.
What Apprise tells us, and what the outbox makes of it:

- SUCCESS → Delivered.
- TIMEOUT (nothing within PAPERTIDE_APPRISE_TIMEOUT_SECONDS) → Retry.
- FAILURE → Retry, with Apprise's own warning as the reason. Apprise reports neither
  the HTTP status nor Retry-After, so a wrong token and a server hiccup look alike;
  the outbox's backoff and PAPERTIDE_OUTBOX_MAX_ATTEMPTS bound the attempts, then the
  message is dead (`papertide outbox list --status dead` shows why).
- A URL Apprise no longer accepts, or nothing to notify (NOMATCH) → Failed, and the
  target is disabled: no attempt can succeed until an operator fixes it.

A message rendered as several parts records `{"sent": n}` under
`payload["_progress"]` after each accepted part (as Slack's threads do), so a retry
resumes with the first part not yet accepted.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import apprise
from apprise import AppriseResultStatus

from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry, SaveProgress
from bot.platforms.apprise.render import Part, to_parts
from bot.platforms.apprise.service import ASSET, body_format, limits_of, load_service
from bot.types import OutboundMessage, Platform

log = logging.getLogger(__name__)

REASON_CHARS = 500


def _reason(result: Any, default: str) -> str:
    lines = [str(entry.message) for entry in result.logs() if entry.level in ("WARNING", "ERROR")]
    return ("; ".join(lines) or default)[:REASON_CHARS]


def to_result(result: Any, service_name: str) -> DeliveryResult | None:
    """Our outcome for one Apprise call; None when the part was accepted."""
    status = result.status
    if status == AppriseResultStatus.SUCCESS:
        return None
    if status == AppriseResultStatus.TIMEOUT:
        return Retry(f"{service_name} did not answer in time")
    if status == AppriseResultStatus.NOMATCH:
        return Failed(f"Apprise had nothing to notify for {service_name}", disable_target=True)
    return Retry(_reason(result, f"{service_name} refused the notification"))


class AppriseChannel:
    """Sends outbox messages to Apprise URLs (Mattermost, Teams, Matrix, Telegram, ntfy…)."""

    platform = Platform.APPRISE

    def __init__(self, *, timeout: float = 30.0, save_progress: SaveProgress | None = None) -> None:
        self._timeout = timeout
        self._save_progress = save_progress

    async def _notify(self, service: Any, part: Part) -> DeliveryResult | None:
        notifier = apprise.Apprise(asset=ASSET)
        notifier.add(service)
        result = await notifier.async_notify(
            body=part.body,
            title=part.title,
            body_format=body_format(service),
            timeout=self._timeout,
        )
        try:
            return to_result(result, str(getattr(service, "service_name", "the service")))
        finally:
            result.close()

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        """Notify the target's service, part by part; never raises for delivery problems."""
        service = load_service(message.target.address)
        if service is None:
            return Failed("Apprise does not accept this target's URL", disable_target=True)
        parts = to_parts(message.kind, message.payload, limits_of(service))
        sent = int(dict(message.payload.get("_progress", {})).get("sent", 0))
        for index in range(sent, len(parts)):
            try:
                failed = await self._notify(service, parts[index])
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Apprise guards its plugins; this is the backstop
                log.exception("apprise.notify_raised", extra={"message_id": message.id})
                return Retry(f"Apprise raised {type(exc).__name__}")
            if failed is not None:
                log.warning(
                    "apprise.send_failed", extra={"message_id": message.id, "result": repr(failed)}
                )
                return failed
            if len(parts) > 1 and self._save_progress is not None:
                await self._save_progress(message.id, {"sent": index + 1})
        return Delivered()
