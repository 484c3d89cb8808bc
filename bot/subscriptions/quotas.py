"""How often a client IP, a chat user or an address may make papertide send a
confirmation mail: the keys, counted by bot.store.quotas (the `quota` table's writer)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from bot.errors import PapertideError
from bot.store import quotas as store_quotas

log = logging.getLogger(__name__)

HOUR = timedelta(hours=1)


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
    """Count one confirmation mail for `key`; False when over `limit` in its window."""
    allowance = await store_quotas.take(
        session=session, key=key, limit=limit, now=now, window=window
    )
    return allowance.allowed
