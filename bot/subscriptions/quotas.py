"""The `quota` table's one writer: how often a client IP, a chat user or an address may
make papertide send a confirmation mail.

Each key counts uses in a window that opens at its first use and lasts `window`; the
count and the window live in the store, so every `serve` process enforces the same
limit. One statement per use (INSERT … ON CONFLICT DO UPDATE … RETURNING), so two
requests racing each other are both counted.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy import case, delete, literal
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.store.columns import UTCDateTime
from bot.store.dialect import dialect_insert
from bot.store.models import Quota

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)
# Counters idle this long are gone: no window is longer than a day.
KEEP = timedelta(days=1)


class TooManyRequests(PapertideError):
    """A client or chat user asked for more mails than its quota; the message says when
    to try again (it never says anything about the address asked for)."""


def ip_quota(ip: str) -> str:
    """The quota key of a client IP."""
    return f"ip:{ip[:64]}"


def chat_user_quota(platform: str, workspace: str, user: str) -> str:
    """The quota key of one chat user (platform, workspace, user id)."""
    return f"chat:{platform}:{workspace[:64]}:{user[:128]}"


def address_quota(key: str) -> str:
    """The quota key of an address (its case-insensitive key)."""
    return f"addr:{key}"


async def take(
    *, session: AsyncSession, key: str, limit: int, now: datetime, window: timedelta = HOUR
) -> bool:
    """Count one use of `key`; False when that makes more than `limit` in its window.

    A `limit` of 0 or less means no limit (nothing is counted).
    """
    if limit <= 0:
        return True
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
    ).returning(col(Quota.count))
    used = int((await session.execute(stmt)).scalar_one())
    await session.execute(
        delete(Quota).where(col(Quota.window_start) < now - KEEP),
        execution_options={"synchronize_session": False},
    )
    if used > limit:
        log.info("quota.exceeded", extra={"kind": key.split(":", 1)[0], "used": used})
        return False
    return True
