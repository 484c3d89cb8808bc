"""Settling: what the channels answered becomes each row's next state.

Delivered → sent. Retry → pending again after `backoff(attempt)` seconds, or exactly
the platform's Retry-After, until `max_attempts`; then dead. Failed → dead, and a target
the platform says is gone is disabled and its queue buried. The statements themselves
are bot.outbox.queue's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry
from bot.outbox.queue import Claimed, bury_disabled, finish, mark_sent
from bot.outbox.targets import disable_target
from bot.timeutil import utcnow
from bot.types import OutboxStatus

BACKOFF_BASE_SECONDS = 5.0
BACKOFF_CAP_SECONDS = 3600.0


@dataclass
class SettleCounts:
    sent: int = 0
    retried: int = 0
    dead: int = 0
    disabled: int = 0


def backoff_seconds(attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter: 5 s, 10 s, 20 s … capped at an hour, each × [0.5, 1)."""
    exponent = min(max(0, attempt - 1), 30)
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * float(2**exponent))
    jitter: float = (rng or random.Random()).random()
    return ceiling * (0.5 + 0.5 * jitter)


async def settle(
    *,
    session: AsyncSession,
    owner: str,
    results: Sequence[tuple[Claimed, DeliveryResult]],
    max_attempts: int,
    now: datetime | None = None,
    backoff: Callable[[int], float] = backoff_seconds,
) -> SettleCounts:
    """Record what the channels answered: sent, retry later, dead; disable gone targets.

    A Retry waits `backoff(attempt)` seconds, or exactly the platform's `after`.
    """
    now = now or utcnow()
    counts = SettleCounts()
    sent_ids = [c.message.id for c, r in results if isinstance(r, Delivered)]
    counts.sent = await mark_sent(session=session, ids=sent_ids, now=now)
    for claimed, result in results:
        msg = claimed.message
        if isinstance(result, Delivered):
            continue
        if isinstance(result, Failed) and result.disable_target:
            await disable_target(
                session=session, target_id=msg.target.id, reason=result.reason, now=now
            )
            await bury_disabled(session=session, target_id=msg.target.id)
            counts.disabled += 1
        if isinstance(result, Retry) and msg.attempt < max_attempts:
            delay = result.after if result.after is not None else backoff(msg.attempt)
            await finish(session, owner, msg.id, OutboxStatus.PENDING, result.reason, now, delay)
            counts.retried += 1
        else:
            reason = result.reason
            if isinstance(result, Retry):
                reason = f"gave up after {msg.attempt} attempts: {reason}"
            await finish(session, owner, msg.id, OutboxStatus.DEAD, reason, now, 0.0)
            counts.dead += 1
    return counts
