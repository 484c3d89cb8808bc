"""Reads of the outbox: operators' lists and counts, taken keys, a target's messages."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.outbox.channel import CONFIG_PROBLEM
from bot.store.models import OutboxRow
from bot.timeutil import as_utc, utcnow
from bot.types import OutboxStatus


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
    counts: dict[str, int] = {str(s): 0 for s in OutboxStatus}
    for status, n in (await session.execute(query)).all():
        counts[status] = int(n)
    return counts


async def oldest_due_age(*, session: AsyncSession, now: datetime | None = None) -> float:
    """Seconds the oldest due pending row has waited (0 when none): the backlog's age."""
    now = now or utcnow()
    query = select(func.min(col(OutboxRow.next_attempt_at))).where(
        col(OutboxRow.status) == OutboxStatus.PENDING, col(OutboxRow.next_attempt_at) <= now
    )
    oldest = (await session.execute(query)).scalar_one_or_none()
    return max(0.0, (now - as_utc(oldest)).total_seconds()) if oldest else 0.0


async def existing_keys(*, session: AsyncSession, keys: Collection[str]) -> set[str]:
    """Which of these keys are taken (sent, queued or reserved)."""
    if not keys:
        return set()
    query = select(col(OutboxRow.key)).where(col(OutboxRow.key).in_(list(keys)))
    return set((await session.execute(query)).scalars().all())


async def find_message(*, session: AsyncSession, key: str) -> OutboxRow | None:
    """The row with this idempotency key, if any."""
    query = select(OutboxRow).where(col(OutboxRow.key) == key)
    return (await session.execute(query)).scalar_one_or_none()


async def recent_messages(*, session: AsyncSession, target_id: int, limit: int) -> list[OutboxRow]:
    """A target's newest rows first."""
    query = (
        select(OutboxRow)
        .where(col(OutboxRow.target_id) == target_id)
        .order_by(col(OutboxRow.id).desc())
        .limit(limit)
    )
    return list((await session.execute(query)).scalars().all())


async def configuration_problem(*, session: AsyncSession) -> dict[str, Any] | None:
    """Messages waiting because a platform blamed our set-up (SMTP auth, relay), with the
    latest such reply; None when there are none. For `outbox stats` and `status`."""
    problem = col(OutboxRow.last_error).startswith(CONFIG_PROBLEM)
    waiting = (col(OutboxRow.status) == OutboxStatus.PENDING) & problem
    count = (await session.execute(select(func.count()).where(waiting))).scalar_one()
    if not count:
        return None
    latest = await session.execute(
        select(col(OutboxRow.last_error)).where(waiting).order_by(col(OutboxRow.id).desc()).limit(1)
    )
    error = str(latest.scalar_one())[len(CONFIG_PROBLEM) :]
    return {"waiting": int(count), "error": error}
