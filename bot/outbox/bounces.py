"""Hard-bounce bookkeeping on `Target.failure_count` (the email channel's counter)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.store.models import Target


async def record_hard_bounce(*, session: AsyncSession, target_id: int) -> int:
    """Count one hard bounce for `target_id` atomically; returns the new count."""
    result = await session.execute(
        update(Target)
        .where(col(Target.id) == target_id)
        .values(failure_count=col(Target.failure_count) + 1)
        .returning(col(Target.failure_count))
    )
    return int(result.scalar_one_or_none() or 0)


def store_bounce_counter(
    sessions: async_sessionmaker[AsyncSession],
) -> Callable[[int], Awaitable[int]]:
    """A `BounceCounter` for `EmailChannel`, each count in its own short transaction."""

    async def count(target_id: int) -> int:
        async with sessions() as session:
            n = await record_hard_bounce(session=session, target_id=target_id)
            await session.commit()
            return n

    return count
