"""The `quota` table's one writer: use counters per key, shared by every process.

Everything papertide limits per client goes through here: confirmation mails per IP,
chat user and address (bot.subscriptions.quotas), questions per person
(bot.ask.quota). Each key counts uses in a window that opens at its first use and lasts
`window`; one statement per use (INSERT … ON CONFLICT DO UPDATE … RETURNING), so two
requests racing each other are both counted. Refused uses count too: a client that
keeps hammering stays limited until its window ends.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import case, delete, literal
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.store.columns import UTCDateTime
from bot.store.dialect import dialect_insert
from bot.store.models import Quota

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# Counters idle this long are gone: no window is longer than a day.
KEEP = timedelta(days=1)


@dataclass(frozen=True, slots=True)
class Allowance:
    allowed: bool
    used: int  # uses in the window, this one included
    retry_after: timedelta = timedelta(0)  # when refused: until the window ends


async def take(
    *, session: AsyncSession, key: str, limit: int, now: datetime, window: timedelta = HOUR
) -> Allowance:
    """Count one use of `key`; refused when that makes more than `limit` in its window.

    A `limit` of 0 or less means no limit (nothing is counted).
    """
    if limit <= 0:
        return Allowance(True, 0)
    expired = col(Quota.window_start) <= literal(now - window, UTCDateTime())
    stmt = dialect_insert(session, Quota).values(key=key, window_start=now, count=1)
    stmt = stmt.on_conflict_do_update(
        index_elements=["key"],
        set_={
            "count": case((expired, 1), else_=col(Quota.count) + 1),
            "window_start": case(
                (expired, literal(now, UTCDateTime())), else_=col(Quota.window_start)
            ),
        },
    ).returning(col(Quota.count), col(Quota.window_start))
    used, started = (await session.execute(stmt)).one()
    await session.execute(
        delete(Quota).where(col(Quota.window_start) < now - KEEP),
        execution_options={"synchronize_session": False},
    )
    if int(used) > limit:
        log.info("quota.exceeded", extra={"kind": key.split(":", 1)[0], "used": used})
        wait = max(started + window - now, timedelta(seconds=1))
        return Allowance(False, int(used), wait)
    return Allowance(True, int(used))
