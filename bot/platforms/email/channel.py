"""EmailChannel: sends any email payload (DIGEST, CONFIRM) through SMTP.

Translates an `OutboundMessage` at the edge (payload -> MIME bytes, `digests.mime`)
and says what happened. Hard bounces (5xx on the recipient) are counted per target
through an injected counter; at `hard_bounce_limit` the result asks the outbox to
disable the target.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from bot.config import Settings
from bot.outbox.channel import DeliveryResult, Failed
from bot.platforms.email.mailer import SmtpMailer
from bot.platforms.email.mime import (
    DkimKey,
    HeaderInjectionError,
    build_message,
    check_address,
    message_id_for,
)
from bot.timeutil import utcnow
from bot.types import OutboundMessage, Platform

log = logging.getLogger(__name__)

# Records one hard bounce for a target id and returns that target's bounce count.
BounceCounter = Callable[[int], Awaitable[int]]


class EmailChannel:
    """The `Channel` for `Platform.EMAIL`: one mailer, its connections reused."""

    platform = Platform.EMAIL

    def __init__(
        self,
        *,
        mailer: SmtpMailer,
        mail_from: str,
        dkim_key: DkimKey | None = None,
        hard_bounce_limit: int = 3,
        count_bounce: BounceCounter | None = None,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self._mailer = mailer
        self._from = mail_from
        self._envelope_from = check_address("From", mail_from)
        self._domain = self._envelope_from.rpartition("@")[2]
        self._dkim = dkim_key
        self._limit = hard_bounce_limit
        self._count_bounce = count_bounce
        self._clock = clock

    @classmethod
    def from_settings(
        cls, settings: Settings, *, count_bounce: BounceCounter | None = None, connections: int = 1
    ) -> EmailChannel:
        """Wire the channel from Settings (SMTP, From, DKIM, bounce limit)."""
        return cls(
            mailer=SmtpMailer.from_settings(settings, connections=connections),
            mail_from=settings.mail_from,
            dkim_key=DkimKey.from_settings(settings),
            hard_bounce_limit=settings.hard_bounce_limit,
            count_bounce=count_bounce,
        )

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        """Send one email payload; never raises for delivery problems."""
        payload = dict(message.payload)
        payload.setdefault("to", message.target.address)
        try:
            recipient = check_address("To", str(payload["to"]))
            raw = build_message(
                payload,
                mail_from=self._from,
                now=self._clock(),
                message_id=message_id_for(message.key, self._domain),
                dkim_key=self._dkim,
            )
        except (HeaderInjectionError, KeyError) as exc:
            # A malformed payload never becomes sendable by retrying.
            return Failed(f"bad email payload: {exc}")
        result = await self._mailer.send(
            sender=self._envelope_from, recipient=recipient, message=raw
        )
        if isinstance(result, Failed) and result.reason.startswith("hard bounce"):
            return await self._bounced(message, result)
        log.info(
            "email.sent" if not isinstance(result, Failed) else "email.failed",
            extra={"key": message.key, "result": type(result).__name__},
        )
        return result

    async def _bounced(self, message: OutboundMessage, result: Failed) -> DeliveryResult:
        count = await self._count_bounce(message.target.id) if self._count_bounce else 1
        disable = count >= self._limit
        log.warning(
            "email.hard_bounce",
            extra={"target_id": message.target.id, "count": count, "disable": disable},
        )
        return Failed(f"{result.reason} ({count}/{self._limit})", disable_target=disable)

    async def close(self) -> None:
        await self._mailer.close()
