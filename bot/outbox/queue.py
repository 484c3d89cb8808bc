"""The outbox: one row per message, unique idempotency key, claimed by workers.

Everything papertide sends passes through here; nothing sends directly.

Life of a row (`status`):
    held ─(quiet hours end)─► folded into one quiet_summary row, itself pending
    pending ─claim─► sending ─► sent
                       │ └────► pending again (Retry: backoff, or the platform's Retry-After)
                       └──────► dead (Failed, too many attempts, or target disabled)
    grouped: a per-paper key reserved by a paper_group / quiet_summary row that carries
             the paper, so a re-poll never sends that paper to that target on its own.
A claim counts as an attempt, so a message that crashes its worker every time still dies.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry
from bot.store.dialect import insert_ignore
from bot.store.models import OutboxRow, Target
from bot.timeutil import as_utc, utcnow
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef

STATUS_PENDING = "pending"
STATUS_SENDING = "sending"
STATUS_SENT = "sent"
STATUS_DEAD = "dead"
STATUS_HELD = "held"
STATUS_GROUPED = "grouped"
STATUSES = (STATUS_PENDING, STATUS_SENDING, STATUS_SENT, STATUS_DEAD, STATUS_HELD, STATUS_GROUPED)

BACKOFF_BASE_SECONDS = 5.0
BACKOFF_CAP_SECONDS = 3600.0
_NO_SYNC = {"synchronize_session": False}


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
    stmt = insert_ignore(session, OutboxRow, "key", **values)
    # RETURNING tells inserted from skipped on both backends (rowcount does not, reliably).
    result = await session.execute(stmt.returning(OutboxRow.id))
    return result.scalar_one_or_none() is not None


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else ""


# --- claiming ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claimed:
    """A leased row: the message for a channel plus what the worker needs to settle it."""

    message: OutboundMessage
    created_at: datetime


async def claim_batch(
    *,
    session: AsyncSession,
    owner: str,
    limit: int,
    lease_seconds: float,
    platforms: Collection[str],
    now: datetime | None = None,
) -> list[Claimed]:
    """Lease up to `limit` due rows for targets on `platforms`; each claim counts one attempt.

    PostgreSQL: `FOR UPDATE SKIP LOCKED`, so workers never wait on each other's rows.
    SQLite: the engine's BEGIN IMMEDIATE makes this transaction the single writer.
    Rows of disabled targets, and of platforms this process has no channel for, are
    left alone (a process with that channel claims them; disabled ones get buried).
    """
    now = now or utcnow()
    if limit <= 0 or not platforms:
        return []
    picked = (
        select(col(OutboxRow.id))
        .join(Target, col(Target.id) == col(OutboxRow.target_id))
        .where(
            col(OutboxRow.status) == STATUS_PENDING,
            col(OutboxRow.next_attempt_at) <= now,
            col(Target.disabled_at).is_(None),
            col(Target.platform).in_(sorted(platforms)),
        )
        .order_by(col(OutboxRow.next_attempt_at))
        .limit(limit)
    )
    if _dialect(session) == "postgresql":
        picked = picked.with_for_update(skip_locked=True, of=OutboxRow)
    stmt = (
        update(OutboxRow)
        .where(col(OutboxRow.id).in_(picked.scalar_subquery()))
        .values(
            status=STATUS_SENDING,
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds),
            attempts=col(OutboxRow.attempts) + 1,
        )
        .returning(
            col(OutboxRow.id),
            col(OutboxRow.key),
            col(OutboxRow.kind),
            col(OutboxRow.payload),
            col(OutboxRow.attempts),
            col(OutboxRow.created_at),
            col(OutboxRow.target_id),
        )
    )
    rows = (await session.execute(stmt, execution_options=_NO_SYNC)).all()
    if not rows:
        return []
    targets = await _target_refs(session, {row.target_id for row in rows})
    claimed = [
        Claimed(
            message=OutboundMessage(
                id=row.id,
                key=row.key,
                kind=MessageKind(row.kind),
                target=targets[row.target_id],
                payload=row.payload,
                attempt=row.attempts,
            ),
            created_at=as_utc(row.created_at),
        )
        for row in rows
    ]
    claimed.sort(key=lambda c: c.message.id)
    return claimed


async def _target_refs(session: AsyncSession, ids: Collection[int]) -> dict[int, TargetRef]:
    query = select(Target).where(col(Target.id).in_(sorted(ids)))
    return {
        t.id: TargetRef(
            id=t.id,
            platform=Platform(t.platform),
            kind=TargetKind(t.kind),
            workspace=t.workspace,
            address=t.address,
        )
        for t in (await session.execute(query)).scalars()
        if t.id is not None
    }


# --- settling ------------------------------------------------------------------------------


@dataclass
class SettleCounts:
    sent: int = 0
    retried: int = 0
    dead: int = 0
    disabled: int = 0


def backoff_seconds(attempt: int, rng: random.Random | None = None) -> float:
    """Exponential backoff with jitter: 5 s, 10 s, 20 s … capped at an hour, each × [0.5, 1)."""
    exponent = min(max(0, attempt - 1), 30)
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * float(2**exponent))
    jitter: float = (rng or random.Random()).random()
    return ceiling * (0.5 + 0.5 * jitter)


async def settle(
    *,
    session: AsyncSession,
    owner: str,
    results: Sequence[tuple[Claimed, DeliveryResult]],
    max_attempts: int,
    now: datetime | None = None,
    backoff: Callable[[int], float] = backoff_seconds,
) -> SettleCounts:
    """Record what the channels answered: sent, retry later, dead; disable gone targets.

    A Retry waits `backoff(attempt)` seconds, or exactly the platform's `after`.
    """
    now = now or utcnow()
    counts = SettleCounts()
    sent_ids = [c.message.id for c, r in results if isinstance(r, Delivered)]
    if sent_ids:
        # Delivered is the truth even if our lease lapsed meanwhile: no owner check.
        await session.execute(
            update(OutboxRow)
            .where(col(OutboxRow.id).in_(sent_ids))
            .values(
                status=STATUS_SENT,
                sent_at=now,
                lease_owner=None,
                lease_expires_at=None,
                last_error=None,
            ),
            execution_options=_NO_SYNC,
        )
        counts.sent = len(sent_ids)
    for claimed, result in results:
        msg = claimed.message
        if isinstance(result, Delivered):
            continue
        if isinstance(result, Failed) and result.disable_target:
            await disable_target(
                session=session, target_id=msg.target.id, reason=result.reason, now=now
            )
            counts.disabled += 1
        if isinstance(result, Retry) and msg.attempt < max_attempts:
            delay = result.after if result.after is not None else backoff(msg.attempt)
            await _finish(session, owner, msg.id, STATUS_PENDING, result.reason, now, delay)
            counts.retried += 1
        else:
            reason = result.reason
            if isinstance(result, Retry):
                reason = f"gave up after {msg.attempt} attempts: {reason}"
            await _finish(session, owner, msg.id, STATUS_DEAD, reason, now, 0.0)
            counts.dead += 1
    return counts


async def _finish(
    session: AsyncSession,
    owner: str,
    row_id: int,
    status: str,
    reason: str,
    now: datetime,
    delay: float,
) -> None:
    # The owner check keeps a lapsed lease from overwriting the row's new owner's outcome.
    await session.execute(
        update(OutboxRow)
        .where(
            col(OutboxRow.id) == row_id,
            col(OutboxRow.lease_owner) == owner,
            col(OutboxRow.status) == STATUS_SENDING,
        )
        .values(
            status=status,
            last_error=reason[:2000],
            next_attempt_at=now + timedelta(seconds=delay),
            lease_owner=None,
            lease_expires_at=None,
        ),
        execution_options=_NO_SYNC,
    )


async def release(
    *,
    session: AsyncSession,
    owner: str,
    items: Sequence[tuple[Claimed, datetime | None]],
) -> int:
    """Give leased rows back unsent (shutdown, pacing): the claim's attempt is undone.

    Each item is (claimed, not_before); None means due now.
    """
    now = utcnow()
    for claimed, not_before in items:
        await session.execute(
            update(OutboxRow)
            .where(
                col(OutboxRow.id) == claimed.message.id,
                col(OutboxRow.lease_owner) == owner,
                col(OutboxRow.status) == STATUS_SENDING,
            )
            .values(
                status=STATUS_PENDING,
                attempts=col(OutboxRow.attempts) - 1,
                next_attempt_at=not_before or now,
                lease_owner=None,
                lease_expires_at=None,
            ),
            execution_options=_NO_SYNC,
        )
    return len(items)


async def renew_leases(
    *, session: AsyncSession, owner: str, lease_seconds: float, now: datetime | None = None
) -> int:
    """Heartbeat: extend every lease `owner` holds, so rows queued behind slow sends stay ours.

    A crashed or hung worker stops renewing, and its rows expire as before.
    """
    now = now or utcnow()
    result = await session.execute(
        update(OutboxRow)
        .where(col(OutboxRow.lease_owner) == owner, col(OutboxRow.status) == STATUS_SENDING)
        .values(lease_expires_at=now + timedelta(seconds=lease_seconds))
        .returning(col(OutboxRow.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


async def requeue_expired(*, session: AsyncSession, now: datetime | None = None) -> int:
    """Rows whose lease lapsed (their worker crashed or hung) become claimable again."""
    now = now or utcnow()
    result = await session.execute(
        update(OutboxRow)
        .where(col(OutboxRow.status) == STATUS_SENDING, col(OutboxRow.lease_expires_at) < now)
        .values(
            status=STATUS_PENDING,
            next_attempt_at=now,
            last_error="lease expired",
            lease_owner=None,
            lease_expires_at=None,
        )
        .returning(col(OutboxRow.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


async def disable_target(
    *, session: AsyncSession, target_id: int, reason: str, now: datetime | None = None
) -> None:
    """Mark a target gone (channel deleted, bot removed, hard bounce) and bury its queue."""
    now = now or utcnow()
    await session.execute(
        update(Target)
        .where(col(Target.id) == target_id, col(Target.disabled_at).is_(None))
        .values(
            disabled_at=now,
            disabled_reason=reason[:2000],
            failure_count=col(Target.failure_count) + 1,
        ),
        execution_options=_NO_SYNC,
    )
    await bury_disabled(session=session, target_id=target_id)


async def bury_disabled(*, session: AsyncSession, target_id: int | None = None) -> int:
    """Waiting rows of disabled targets go dead with the target's reason."""
    disabled = select(col(Target.id)).where(col(Target.disabled_at).is_not(None))
    if target_id is not None:
        disabled = disabled.where(col(Target.id) == target_id)
    result = await session.execute(
        update(OutboxRow)
        .where(
            col(OutboxRow.status).in_([STATUS_PENDING, STATUS_HELD]),
            col(OutboxRow.target_id).in_(disabled.scalar_subquery()),
        )
        .values(status=STATUS_DEAD, last_error="target disabled")
        .returning(col(OutboxRow.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


def progress_saver(
    sessions: async_sessionmaker[AsyncSession],
) -> Callable[[int, dict[str, Any]], Awaitable[None]]:
    """Store a multi-part message's progress in its row (`payload["_progress"]`), so a
    retry resumes after the last part the platform accepted instead of repeating all."""

    async def save(message_id: int, progress: dict[str, Any]) -> None:
        async with sessions() as session:
            row = await session.get(OutboxRow, message_id)
            if row is not None:
                row.payload = {**row.payload, "_progress": progress}
                await session.commit()

    return save
