"""The one small protocol every delivery channel implements, and its results.

A channel translates an `OutboundMessage` at the edge (`to_blocks`, `to_embed`, a
MIME message) and says what happened; the outbox owns retries, pacing and dead
letters, so a channel never sleeps or retries by itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from bot.types import OutboundMessage, Platform


@dataclass(frozen=True, slots=True)
class Delivered:
    remote_id: str | None = None  # Slack ts, Discord message id, SMTP queue id…


# Prefix of a Retry reason that blames our own set-up (SMTP credentials, relay), not
# the recipient: `outbox stats` and `status` show such rows as a configuration problem.
CONFIG_PROBLEM = "configuration problem: "


@dataclass(frozen=True, slots=True)
class Retry:
    """Temporary failure. `after` (seconds) is honoured exactly when the platform said it."""

    reason: str
    after: float | None = None


@dataclass(frozen=True, slots=True)
class Failed:
    """Permanent failure; `disable_target` when the target itself is gone."""

    reason: str
    disable_target: bool = False


DeliveryResult = Delivered | Retry | Failed


class Channel(Protocol):
    platform: Platform

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        """Send one message; never raises for delivery problems, returns a result."""
        ...


# Multi-part messages (Slack threads, Discord batches) record how far they got, so a
# retry resumes there: (outbox id, progress) -> stored in payload["_progress"].
SaveProgress = Callable[[int, dict[str, Any]], Awaitable[None]]
