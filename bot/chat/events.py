"""The `processed_event` table's one writer: platform events already handled.

Slack retries an event up to three times; the first delivery claims its id, the
retries find it taken and are answered without acting again.
"""

from __future__ import annotations

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
