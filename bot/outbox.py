"""The outbox: one row per message, unique idempotency key, claimed by workers.

Everything papertide sends passes through here; nothing sends directly.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from bot.store.models import OutboxRow
from bot.timeutil import utcnow
from bot.types import MessageKind


def message_key(target_id: int, kind: MessageKind | str, subject: str) -> str:
    """Idempotency key: target + kind + paper id (or ISO week for digests)."""
    return f"t{target_id}:{kind}:{subject}"


async def enqueue(
    *,
    session: AsyncSession,
    target_id: int,
    kind: MessageKind,
    key: str,
    payload: dict[str, Any],
    not_before: datetime | None = None,
    status: str = "pending",
) -> bool:
    """Add one message unless its key exists; True when a row was inserted.

    The database's unique constraint decides (INSERT … ON CONFLICT DO NOTHING), so two
    processes enqueuing the same key at once still yield one row.
    """
    values = {
        "key": key,
        "target_id": target_id,
        "kind": str(kind),
        "payload": payload,
        "status": status,
        "attempts": 0,
        "next_attempt_at": not_before or utcnow(),
        "created_at": utcnow(),
    }
    dialect = session.bind.dialect.name if session.bind is not None else ""
    stmt: Any
    if dialect == "postgresql":
        stmt = pg_insert(OutboxRow).values(**values).on_conflict_do_nothing(index_elements=["key"])
    elif dialect == "sqlite":
        stmt = (
            sqlite_insert(OutboxRow).values(**values).on_conflict_do_nothing(index_elements=["key"])
        )
    else:
        stmt = insert(OutboxRow).values(**values)
    # RETURNING tells inserted from skipped on both backends (rowcount does not, reliably).
    result = await session.execute(stmt.returning(OutboxRow.id))
    return result.scalar_one_or_none() is not None
