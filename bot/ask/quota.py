"""The per-user question quota: the `ask_request` table's one writer.

A question costs retrieval and, with a model, a model call; `take` lets a person ask
`limit` questions per `window` and says how long to wait otherwise. It lives in the
store, not in memory, so several `serve` processes share one count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.store.models import AskRequest


@dataclass(frozen=True, slots=True)
class QuotaResult:
    allowed: bool
    used: int  # questions in the window, this one included when allowed
    retry_after: timedelta = timedelta(0)


async def take(
    *,
    session: AsyncSession,
    platform: str,
    workspace: str,
    user: str,
    now: datetime,
    limit: int,
    window: timedelta = timedelta(hours=1),
) -> QuotaResult:
    """Record one question for (platform, workspace, user) unless over `limit` in `window`."""
    who = (
        col(AskRequest.platform) == platform,
        col(AskRequest.workspace) == workspace,
        col(AskRequest.user_id) == user,
    )
    # Older rows say nothing any more: each person's rows stay bounded by `limit`.
    await session.execute(delete(AskRequest).where(*who, col(AskRequest.asked_at) < now - window))
    row = (
        await session.execute(select(func.count(), func.min(col(AskRequest.asked_at))).where(*who))
    ).one()
    used, oldest = int(row[0]), row[1]
    if used >= limit:
        wait = (oldest + window - now) if oldest is not None else window
        return QuotaResult(False, used, max(wait, timedelta(seconds=1)))
    session.add(AskRequest(platform=platform, workspace=workspace, user_id=user, asked_at=now))
    await session.flush()
    return QuotaResult(True, used + 1)
