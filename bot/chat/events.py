"""The `processed_event` table's one writer: platform events already handled.

Slack retries an event up to three times; the first delivery claims its id, the
retries find it taken and are answered without acting again. The Slack route claims a
digest of every signed request body the same way, so a replayed request never acts.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.store.dialect import insert_ignore
from bot.store.models import ProcessedEvent
from bot.timeutil import utcnow
from bot.types import Platform


async def claim_event(*, session: AsyncSession, platform: Platform, event_id: str) -> bool:
    """Record a platform event id; False when it was seen before (a retried delivery)."""
    result = await session.execute(
        insert_ignore(
            session, ProcessedEvent, event_id=event_id, platform=str(platform), seen_at=utcnow()
        ).returning(col(ProcessedEvent.event_id))
    )
    return result.scalar_one_or_none() is not None


async def event_seen(*, session: AsyncSession, event_id: str) -> bool:
    """Was this id claimed already (by any platform: ids are unique, as in `claim_event`)?
    A read only (no write lock held), to skip work before `claim_event`, which decides."""
    found = await session.execute(
        select(col(ProcessedEvent.event_id)).where(col(ProcessedEvent.event_id) == event_id)
    )
    return found.first() is not None


async def forget_events(*, session: AsyncSession, before: datetime) -> int:
    """Forget events (and request digests) seen before `before`; nobody retries that late."""
    result = await session.execute(
        delete(ProcessedEvent)
        .where(col(ProcessedEvent.seen_at) < before)
        .returning(col(ProcessedEvent.event_id)),
        execution_options={"synchronize_session": False},
    )
    return len(result.all())
