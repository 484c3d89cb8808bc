"""Slack's events we act on: retried deliveries answered once, uninstalls and archived
channels stop delivery there."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from slack_bolt.response import BoltResponse
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.events import claim_event
from bot.outbox.targets import disable_workspace_targets
from bot.types import Platform

log = logging.getLogger(__name__)

GONE_EVENTS = ("app_uninstalled", "tokens_revoked")
# Public channels, and private ones ("groups" in Slack's events; groups:read asks for them).
CHANNEL_GONE_EVENTS = ("channel_archive", "channel_deleted", "group_archive", "group_deleted")


@dataclass(frozen=True, slots=True)
class EventHandlers:
    """Event listeners, on the acks' loop and its sessions."""

    sessions: async_sessionmaker[AsyncSession]

    async def skip_seen_events(self, body: dict[str, Any], next: Any) -> BoltResponse | None:
        """Slack retries an event up to three times; the processed_event table answers once."""
        event_id = body.get("event_id") if body.get("type") == "event_callback" else None
        if event_id:
            async with self.sessions() as session, session.begin():
                fresh = await claim_event(
                    session=session, platform=Platform.SLACK, event_id=str(event_id)[:128]
                )
            if not fresh:
                log.info("slack.event_duplicate", extra={"event_id": event_id})
                return BoltResponse(status=200, body="")
        return await next()

    async def on_gone(self, body: dict[str, Any], event: dict[str, Any]) -> None:
        """App uninstalled, token revoked, channel archived or deleted: stop sending there."""
        team = str(body.get("team_id", ""))
        kind = str(event.get("type", ""))
        address = None if kind in GONE_EVENTS else str(event.get("channel", ""))
        async with self.sessions() as session, session.begin():
            ids = await disable_workspace_targets(
                session=session, platform=Platform.SLACK, workspace=team, address=address,
                reason=kind,
            )  # fmt: skip
        # Their queued messages are buried by the workers' upkeep.
        log.info(
            "slack.targets_disabled", extra={"team_id": team, "event": kind, "count": len(ids)}
        )
