"""The outbox: one row per message, unique idempotency key, claimed by workers.

Everything papertide sends passes through here; nothing sends directly. This module is
the one writer of the `outbox` table: rows are added and reserved here (fan-out,
digests, confirmation mails), claimed and leased (workers), and given their outcome
(bot.outbox.settle decides which).

Life of a row (`OutboxStatus`):
    held ─(quiet hours end)─► folded into one quiet_summary row, itself pending
    pending ─claim─► sending ─► sent
                       │ └────► pending again (Retry: backoff, or the platform's Retry-After)
                       └──────► dead (Failed, too many attempts, or target disabled)
    grouped: a per-paper key reserved by a paper_group / quiet_summary row that carries
             the paper, so a re-poll never sends that paper to that target on its own.
A claim counts as an attempt, so a message that crashes its worker every time still dies.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Update, and_, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.outbox.targets import UNSUBSCRIBED, target_refs
from bot.store.dialect import insert_ignore
from bot.store.engine import Executor
from bot.store.models import OutboxRow, Target
from bot.timeutil import as_utc, utcnow
from bot.types import MessageKind, OutboundMessage, OutboxStatus, Platform

STATUSES = tuple(OutboxStatus)
_NO_SYNC = {"synchronize_session": False}


def _deliverable() -> Any:
    """A row's target takes mail: enabled, or an unsubscribed mailbox whose owner asked
    for a confirmation (that mail is how they come back)."""
    return or_(
        col(Target.disabled_at).is_(None),
        and_(
            col(OutboxRow.kind) == str(MessageKind.CONFIRM),
            col(Target.disabled_reason) == UNSUBSCRIBED,
        ),
    )


def message_key(target_id: int, kind: MessageKind | str, subject: str) -> str:
    """Idempotency key: target + kind + paper id (or ISO week for digests)."""
    return f"t{target_id}:{kind}:{subject}"


async def enqueue(
    *,
    session: AsyncSession,
    target_id: int,
    kind: MessageKind,
    key: str,
    payload: Any,
    not_before: datetime | None = None,
    status: OutboxStatus = OutboxStatus.PENDING,
) -> bool:
    """Add one message unless its key exists; True when a row was inserted.

    The database's unique constraint decides (INSERT … ON CONFLICT DO NOTHING), so two
    processes enqueuing the same key at once still yield one row.
    """
    now = utcnow()
    values = {
        "key": key,
        "target_id": target_id,
        "kind": str(kind),
        "payload": dict(payload),
        "status": str(status),
        "attempts": 0,
        "next_attempt_at": not_before or now,
        "created_at": now,
    }
    stmt = insert_ignore(session, OutboxRow, "key", **values)
    # RETURNING tells inserted from skipped on both backends (rowcount does not, reliably).
    result = await session.execute(stmt.returning(OutboxRow.id))
    return result.scalar_one_or_none() is not None


async def due_held(*, session: AsyncSession, now: datetime) -> list[OutboxRow]:
    """Held rows whose quiet hours are over, by target; locked on PostgreSQL."""
    query = (
        select(OutboxRow)
        .where(col(OutboxRow.status) == OutboxStatus.HELD, col(OutboxRow.next_attempt_at) <= now)
        .order_by(col(OutboxRow.target_id), col(OutboxRow.id))
    )
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    return list((await session.execute(query)).scalars().all())


async def set_status(
    *, session: AsyncSession, ids: Sequence[int], status: OutboxStatus, now: datetime
) -> None:
    """Move rows that no worker holds (held, pending) to `status`, due at `now`."""
    if ids:
        await session.execute(
            update(OutboxRow)
            .where(col(OutboxRow.id).in_(list(ids)))
            .values(status=str(status), next_attempt_at=now),
            execution_options=_NO_SYNC,
        )


# Built once: an unsubscribe click runs it, and composing it cost more than running it.
_CANCEL = (
    update(OutboxRow)
    .where(
        col(OutboxRow.target_id) == bindparam("to_target"),
        col(OutboxRow.status).in_([OutboxStatus.PENDING, OutboxStatus.HELD]),
    )
    .values(status=str(OutboxStatus.DEAD), last_error=bindparam("why"))
    .returning(col(OutboxRow.id))
    .execution_options(**_NO_SYNC)
)


async def cancel_queued(*, session: AsyncSession, target_id: int, reason: str) -> int:
    """Messages still waiting for a target die now ("no mail from the next send on")."""
    result = await session.execute(_CANCEL, {"to_target": target_id, "why": reason[:2000]})
    return len(result.all())


def cancel_queued_at_statement(address: ColumnElement[Any]) -> Update:
    """`_CANCEL` for the target whose address is `address` (a bound parameter, or a
    subquery that finds it), found inside the statement (no round trip); composable into
    one statement of several changes (bot.subscriptions.one_click). Parameters:
    on_platform, in_workspace, why."""
    return (
        update(OutboxRow)
        .where(
            col(OutboxRow.target_id).in_(
                select(col(Target.id)).where(
                    col(Target.platform) == bindparam("on_platform"),
                    col(Target.workspace) == bindparam("in_workspace"),
                    col(Target.address) == address,
                )
            ),
            col(OutboxRow.status).in_([OutboxStatus.PENDING, OutboxStatus.HELD]),
        )
        .values(status=str(OutboxStatus.DEAD), last_error=bindparam("why"))
    )


_CANCEL_ADDRESS = cancel_queued_at_statement(bindparam("at_address"))


async def cancel_queued_at(
    *, session: Executor, platform: Platform, workspace: str, address: str, reason: str
) -> None:
    """`cancel_queued` for the target at (platform, workspace, address), if there is one."""
    await session.execute(
        _CANCEL_ADDRESS,
        {"on_platform": str(platform), "in_workspace": workspace, "at_address": address,
         "why": reason[:2000]},
    )  # fmt: skip


# --- workers: claims and leases ---------------------------------------------------------


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
            col(OutboxRow.status) == OutboxStatus.PENDING,
            col(OutboxRow.next_attempt_at) <= now,
            _deliverable(),
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
            status=OutboxStatus.SENDING,
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
    targets = await target_refs(session=session, ids=[row.target_id for row in rows])
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


async def mark_sent(*, session: AsyncSession, ids: Sequence[int], now: datetime) -> int:
    """Rows the platform accepted. Delivered is the truth even if the lease lapsed
    meanwhile, so there is no owner check."""
    if ids:
        await session.execute(
            update(OutboxRow)
            .where(col(OutboxRow.id).in_(list(ids)))
            .values(
                status=OutboxStatus.SENT,
                sent_at=now,
                lease_owner=None,
                lease_expires_at=None,
                last_error=None,
            ),
            execution_options=_NO_SYNC,
        )
    return len(ids)


async def finish(
    session: AsyncSession,
    owner: str,
    row_id: int,
    status: OutboxStatus,
    reason: str,
    now: datetime,
    delay: float,
) -> None:
    """A retry (pending again after `delay`) or a death, if `owner` still holds the row."""
    # The owner check keeps a lapsed lease from overwriting the row's new owner's outcome.
    await session.execute(
        update(OutboxRow)
        .where(
            col(OutboxRow.id) == row_id,
            col(OutboxRow.lease_owner) == owner,
            col(OutboxRow.status) == OutboxStatus.SENDING,
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
                col(OutboxRow.status) == OutboxStatus.SENDING,
            )
            .values(
                status=OutboxStatus.PENDING,
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
        .where(col(OutboxRow.lease_owner) == owner, col(OutboxRow.status) == OutboxStatus.SENDING)
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
        .where(col(OutboxRow.status) == OutboxStatus.SENDING, col(OutboxRow.lease_expires_at) < now)
        .values(
            status=OutboxStatus.PENDING,
            next_attempt_at=now,
            last_error="lease expired",
            lease_owner=None,
            lease_expires_at=None,
        )
        .returning(col(OutboxRow.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


async def bury_disabled(*, session: AsyncSession, target_id: int | None = None) -> int:
    """Waiting rows of disabled targets go dead with the target's reason."""
    disabled = select(col(Target.id)).where(col(Target.disabled_at).is_not(None))
    if target_id is not None:
        disabled = disabled.where(col(Target.id) == target_id)
    stopped = select(col(Target.id)).where(col(Target.disabled_reason) == UNSUBSCRIBED)
    result = await session.execute(
        update(OutboxRow)
        .where(
            col(OutboxRow.status).in_([OutboxStatus.PENDING, OutboxStatus.HELD]),
            col(OutboxRow.target_id).in_(disabled.scalar_subquery()),
            # A confirmation asked for after unsubscribing is how its owner comes back.
            ~and_(
                col(OutboxRow.kind) == str(MessageKind.CONFIRM),
                col(OutboxRow.target_id).in_(stopped.scalar_subquery()),
            ),
        )
        .values(status=OutboxStatus.DEAD, last_error="target disabled")
        .returning(col(OutboxRow.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


async def retry_dead(*, session: AsyncSession, ids: Sequence[int] | None = None) -> int:
    """Dead rows (all, or these ids) become pending with a fresh attempt budget."""
    where = [col(OutboxRow.status) == OutboxStatus.DEAD]
    if ids is not None:
        where.append(col(OutboxRow.id).in_(list(ids)))
    result = await session.execute(
        update(OutboxRow)
        .where(*where)
        .values(status=OutboxStatus.PENDING, attempts=0, next_attempt_at=utcnow())
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


def _dialect(session: AsyncSession) -> str:
    return session.bind.dialect.name if session.bind is not None else ""
