"""The `target` table's one owner: where messages go, and whether they still can.

A target is a chat channel, a chat user (DMs) or a mailbox, keyed by
(platform, workspace, address). The outbox owns the table because delivery itself must
disable a target (channel deleted, bot removed, hard bounces) in the same transaction
that settles the message; subscriptions, chat and digests create and look targets up
through the functions here and never write the table themselves.

Keyword-only functions taking an explicit `session`; the caller commits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Update, bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.store.dialect import dialect_insert
from bot.store.engine import Executor
from bot.store.models import Target
from bot.timeutil import utcnow
from bot.types import Platform, TargetKind, TargetRef

_NO_SYNC = {"synchronize_session": False}
# The reason a mailbox is stopped when its owner unsubscribes. Such a mailbox still gets
# the confirmation mails its owner asks for again (bot.outbox.queue lets them through).
UNSUBSCRIBED = "unsubscribed"


def _row(
    platform: Platform, kind: TargetKind, workspace: str, address: str, person_id: int | None
) -> dict[str, Any]:
    return {
        "platform": str(platform),
        "kind": str(kind),
        "workspace": workspace,
        "address": address,
        "person_id": person_id,
        "settings": {},
        "failure_count": 0,
        "created_at": utcnow(),
    }


async def ensure_targets(
    *,
    session: AsyncSession,
    platform: Platform,
    kind: TargetKind,
    workspace: str,
    addresses: dict[str, int | None],
) -> dict[str, Target]:
    """Get or create one target per address (value: the person to link, if any).

    The rows are read first: a target is created once and used by every later command,
    so the usual case is one SELECT. The missing ones get one INSERT … ON CONFLICT DO
    NOTHING, so concurrent callers still yield one row per address, and are read again;
    an existing row without a person gets the given one.
    """
    if not addresses:
        return {}
    targets = await find_targets(
        session=session, platform=platform, workspace=workspace, addresses=list(addresses)
    )
    missing = [a for a in addresses if a not in targets]
    if missing:
        rows = [_row(platform, kind, workspace, a, addresses[a]) for a in missing]
        stmt = dialect_insert(session, Target).values(rows)
        await session.execute(
            stmt.on_conflict_do_nothing(index_elements=["platform", "workspace", "address"])
        )
        targets.update(
            await find_targets(
                session=session, platform=platform, workspace=workspace, addresses=missing
            )
        )
    for address, target in targets.items():
        person_id = addresses[address]
        if target.person_id is None and person_id is not None:
            target.person_id = person_id  # created before the person was known
    await session.flush()
    return targets


async def find_targets(
    *, session: AsyncSession, platform: Platform, workspace: str, addresses: Sequence[str]
) -> dict[str, Target]:
    """The existing targets among `addresses`, by address, in one query."""
    found = await session.execute(
        select(Target).where(
            col(Target.platform) == str(platform),
            col(Target.workspace) == workspace,
            col(Target.address).in_(list(addresses)),
        )
    )
    return {t.address: t for t in found.scalars()}


async def get_or_create_target(
    *,
    session: AsyncSession,
    platform: Platform,
    workspace: str,
    address: str,
    kind: TargetKind,
    person_id: int | None = None,
) -> Target:
    """The target for (platform, workspace, address), created on first use."""
    found = await ensure_targets(
        session=session,
        platform=platform,
        kind=kind,
        workspace=workspace,
        addresses={address: person_id},
    )
    return found[address]


async def find_target(
    *, session: AsyncSession, platform: Platform, workspace: str, address: str
) -> Target | None:
    """The existing target, or None (read-only commands never create rows)."""
    found = await session.execute(
        select(Target).where(
            col(Target.platform) == str(platform),
            col(Target.workspace) == workspace,
            col(Target.address) == address,
        )
    )
    return found.scalar_one_or_none()


async def target_refs(*, session: AsyncSession, ids: Sequence[int]) -> dict[int, TargetRef]:
    """Targets as adapters see them (no ORM rows), by id."""
    query = select(Target).where(col(Target.id).in_(sorted(set(ids))))
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


async def link_person(*, session: AsyncSession, target: Target, person_id: int | None) -> None:
    """Link a chat or mail target to the person it belongs to (None unlinks)."""
    target.person_id = person_id
    await session.flush()


async def unlink_person(*, session: AsyncSession, person_id: int) -> None:
    """Every target of a person forgets them (the person leaves for good)."""
    await session.execute(
        update(Target).where(col(Target.person_id) == person_id).values(person_id=None),
        execution_options=_NO_SYNC,
    )


async def set_settings(*, session: AsyncSession, target: Target, **changes: Any) -> None:
    """Change keys of `Target.settings` (None removes one); reassigned so the ORM sees it."""
    merged = {**target.settings, **changes}
    target.settings = {k: v for k, v in merged.items() if v is not None}
    await session.flush()


async def enable_target(*, session: AsyncSession, target: Target) -> None:
    """Deliver to this target again (a follow after the bot was re-invited, a resumed mail)."""
    target.disabled_at, target.disabled_reason, target.failure_count = None, None, 0
    await session.flush()


async def disable_target(
    *,
    session: AsyncSession,
    target_id: int,
    reason: str,
    now: datetime | None = None,
    failure: bool = True,
) -> bool:
    """Mark a target gone (channel deleted, bot removed, hard bounce) or stopped
    (unsubscribed: `failure=False`, which does not count against it).

    False when it was disabled already. The caller buries its queued messages
    (`bot.outbox.settle.bury_disabled`), in the same transaction.
    """
    result = await session.execute(
        update(Target)
        .where(col(Target.id) == target_id, col(Target.disabled_at).is_(None))
        .values(
            disabled_at=now or utcnow(),
            disabled_reason=reason[:2000],
            failure_count=col(Target.failure_count) + int(failure),
        )
        .returning(col(Target.id)),
        execution_options=_NO_SYNC,
    )
    return result.first() is not None


def disable_address_statement(address: ColumnElement[Any]) -> Update:
    """`disable_address`'s statement for the target whose address is `address` (a bound
    parameter, or a subquery that finds it), for writers that compose one statement of
    several changes (the one-click unsubscribe, bot.subscriptions.one_click). Parameters:
    on_platform, in_workspace, now, why, failed."""
    return (
        update(Target)
        .where(
            col(Target.platform) == bindparam("on_platform"),
            col(Target.workspace) == bindparam("in_workspace"),
            col(Target.address) == address,
            col(Target.disabled_at).is_(None),
        )
        .values(
            disabled_at=bindparam("now"),
            disabled_reason=bindparam("why"),
            failure_count=col(Target.failure_count) + bindparam("failed"),
        )
        .returning(col(Target.id))
    )


# Built once: composing it per call cost more than running it.
_DISABLE_ADDRESS = disable_address_statement(bindparam("at_address"))


async def disable_address(
    *,
    session: Executor,
    platform: Platform,
    workspace: str,
    address: str,
    reason: str,
    now: datetime,
    failure: bool = True,
) -> bool:
    """`disable_target` for the target at (platform, workspace, address), found by the
    same statement; False when there is none or it was disabled already."""
    result = await session.execute(
        _DISABLE_ADDRESS,
        {
            "on_platform": str(platform),
            "in_workspace": workspace,
            "at_address": address,
            "now": now,
            "why": reason[:2000],
            "failed": int(failure),
        },
    )
    return result.first() is not None


async def disable_workspace_targets(
    *, session: AsyncSession, platform: Platform, workspace: str, address: str | None, reason: str
) -> list[int]:
    """Disable a workspace's targets (or one address) when the platform says they are gone."""
    stmt = update(Target).where(
        col(Target.platform) == str(platform),
        col(Target.workspace) == workspace,
        col(Target.disabled_at).is_(None),
    )
    if address is not None:
        stmt = stmt.where(col(Target.address) == address)
    result = await session.execute(
        stmt.values(disabled_at=utcnow(), disabled_reason=reason[:2000]).returning(col(Target.id)),
        execution_options=_NO_SYNC,
    )
    return [int(i) for (i,) in result.all() if i is not None]


async def delete_targets(*, session: AsyncSession, ids: Sequence[int]) -> int:
    """Delete targets; their follows, alerts and messages go with them (ON DELETE CASCADE)."""
    if not ids:
        return 0
    result = await session.execute(
        delete(Target).where(col(Target.id).in_(list(ids))).returning(col(Target.id)),
        execution_options=_NO_SYNC,
    )
    return len(result.all())


async def record_hard_bounce(*, session: AsyncSession, target_id: int) -> int:
    """Count one hard bounce for `target_id` atomically; returns the new count."""
    result = await session.execute(
        update(Target)
        .where(col(Target.id) == target_id)
        .values(failure_count=col(Target.failure_count) + 1)
        .returning(col(Target.failure_count)),
        execution_options=_NO_SYNC,
    )
    return int(result.scalar_one_or_none() or 0)


def bounce_counter(sessions: async_sessionmaker[AsyncSession]) -> Callable[[int], Awaitable[int]]:
    """The email channel's `count_bounce`, each count in its own short transaction."""

    async def count(target_id: int) -> int:
        async with sessions() as session, session.begin():
            return await record_hard_bounce(session=session, target_id=target_id)

    return count


async def restore_target(
    *, session: AsyncSession, values: dict[str, Any], person_id: int | None
) -> tuple[Target, bool]:
    """Insert a target exactly as a backup describes it, unless (platform, workspace,
    address) exists; (the row, whether it was inserted). An existing row is kept as is."""
    row: dict[str, Any] = {
        "platform": str(values["platform"]),
        "kind": str(values["kind"]),
        "workspace": str(values.get("workspace", "")),
        "address": str(values["address"]),
        "person_id": person_id,
        "settings": dict(values.get("settings") or {}),
        "disabled_at": values.get("disabled_at"),
        "disabled_reason": values.get("disabled_reason"),
        "failure_count": int(values.get("failure_count") or 0),
        "created_at": values.get("created_at") or utcnow(),
    }
    stmt = dialect_insert(session, Target).values(row)
    inserted = await session.execute(
        stmt.on_conflict_do_nothing(index_elements=["platform", "workspace", "address"]).returning(
            col(Target.id)
        )
    )
    created = inserted.scalar_one_or_none() is not None
    target = await find_target(
        session=session, platform=Platform(row["platform"]), workspace=row["workspace"],
        address=row["address"],
    )  # fmt: skip
    assert target is not None
    return target, created
