"""The per-person question quota: a question costs retrieval and, with a model, a model
call. Counted in the store (bot.store.quotas), so several `serve` processes share it."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.quotas import Allowance
from bot.store.quotas import take as take_use


async def take(
    *,
    session: AsyncSession,
    platform: str,
    workspace: str,
    user: str,
    now: datetime,
    limit: int,
    window: timedelta = timedelta(hours=1),
) -> Allowance:
    """Count one question of (platform, workspace, user) unless over `limit` in `window`."""
    key = f"ask:{platform}:{workspace[:64]}:{user[:320]}"
    return await take_use(session=session, key=key, limit=limit, now=now, window=window)
