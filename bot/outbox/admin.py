"""Operator queries on the outbox: list, stats, retry dead letters (`papertide outbox …`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.outbox.queue import STATUS_DEAD, STATUS_PENDING, STATUSES
from bot.store.models import OutboxRow
from bot.timeutil import as_utc, utcnow

_NO_SYNC = {"synchronize_session": False}


async def retry_dead(*, session: AsyncSession, ids: Sequence[int] | None = None) -> int:
    """Dead rows (all, or these ids) become pending with a fresh attempt budget."""
    where = [col(OutboxRow.status) == STATUS_DEAD]
    if ids is not None:
        where.append(col(OutboxRow.id).in_(list(ids)))
    result = await session.execute(
        update(OutboxRow)
        .where(*where)
        .values(status=STATUS_PENDING, attempts=0, next_attempt_at=utcnow())
        .returning(col(OutboxRow.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


async def list_messages(
    *, session: AsyncSession, status: str | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """Newest rows first, as plain dicts for `papertide outbox list`."""
    query = select(OutboxRow).order_by(col(OutboxRow.id).desc()).limit(limit)
    if status:
        query = query.where(col(OutboxRow.status) == status)
    rows = (await session.execute(query)).scalars().all()
    return [
        {
            "id": r.id,
            "key": r.key,
            "target_id": r.target_id,
            "kind": r.kind,
            "status": r.status,
            "attempts": r.attempts,
            "next_attempt_at": r.next_attempt_at.isoformat(),
            "last_error": r.last_error,
            "lease_owner": r.lease_owner,
            "created_at": r.created_at.isoformat(),
            "sent_at": r.sent_at.isoformat() if r.sent_at else None,
        }
        for r in rows
    ]


async def count_by_status(*, session: AsyncSession) -> dict[str, int]:
    """Rows per status, every known status present (zero when empty)."""
    query = select(col(OutboxRow.status), func.count()).group_by(col(OutboxRow.status))
    counts = dict.fromkeys(STATUSES, 0)
    for status, n in (await session.execute(query)).all():
        counts[status] = int(n)
    return counts


async def oldest_due_age(*, session: AsyncSession, now: datetime | None = None) -> float:
    """Seconds the oldest due pending row has waited (0 when none): the backlog's age."""
    now = now or utcnow()
    query = select(func.min(col(OutboxRow.next_attempt_at))).where(
        col(OutboxRow.status) == STATUS_PENDING, col(OutboxRow.next_attempt_at) <= now
    )
    oldest = (await session.execute(query)).scalar_one_or_none()
    return max(0.0, (now - as_utc(oldest)).total_seconds()) if oldest else 0.0
