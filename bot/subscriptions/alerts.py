"""The `alert` table's one writer: a person's keyword alerts, in the query language.

An alert belongs to one (user or mailbox) target and fires there. Keyword-only
functions taking an explicit `session`; the caller commits. Another target's alert id
is answered exactly like an unknown one (`NoSuchAlert`), so ids reveal nothing.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.matching.query import check_query
from bot.store.models import Alert, Target
from bot.timeutil import utcnow


class NoSuchAlert(PapertideError):
    """The alert id is unknown, or belongs to someone else (we never say which)."""


class TooManyAlerts(PapertideError):
    """The target keeps as many alerts as `max_alerts_per_person` allows; `limit` says how
    many that is."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"You have {limit} alerts, the most papertide keeps for one person.")
        self.limit = limit


async def list_alerts(
    *, session: AsyncSession, target: Target, include_inactive: bool = False
) -> list[Alert]:
    """The target's alerts (active ones unless told otherwise), oldest first."""
    stmt = select(Alert).where(col(Alert.target_id) == target.id).order_by(col(Alert.id))
    if not include_inactive:
        stmt = stmt.where(col(Alert.active).is_(True))
    return list((await session.execute(stmt)).scalars())


async def add_alert(*, session: AsyncSession, target: Target, query: str, limit: int = 0) -> Alert:
    """Store an alert for a target, in the canonical form the engine loads.

    Raises QueryError (one line) when the query does not parse, or when its canonical
    form, the one stored, would not load (e.g. it grows past the length limit once every
    operator is written out): an alert is never accepted that would then never run.
    TooManyAlerts when the target has `limit` alerts already (0: no limit): matching cost
    grows with every alert, so one person must not be able to add thousands.
    """
    assert target.id is not None
    stored = check_query(query).text
    if limit > 0:
        held = await session.execute(
            select(func.count()).select_from(Alert).where(col(Alert.target_id) == target.id)
        )
        if int(held.scalar_one()) >= limit:
            raise TooManyAlerts(limit)
    alert = Alert(target_id=target.id, query=stored, active=True, created_at=utcnow())
    session.add(alert)
    await session.flush()
    return alert


async def _own_alert(*, session: AsyncSession, target: Target, alert_id: int) -> Alert:
    found = await session.execute(
        select(Alert).where(
            col(Alert.id) == alert_id,
            col(Alert.target_id) == target.id,
            col(Alert.active).is_(True),
        )
    )
    alert = found.scalar_one_or_none()
    if alert is None:
        raise NoSuchAlert(f"no alert #{alert_id}")
    return alert


async def remove_alert(*, session: AsyncSession, target: Target, alert_id: int) -> Alert:
    """Delete one of the target's own alerts; NoSuchAlert for anyone else's id."""
    alert = await _own_alert(session=session, target=target, alert_id=alert_id)
    await session.delete(alert)
    await session.flush()
    return alert


async def mute_alert(
    *, session: AsyncSession, target: Target, alert_id: int, until: datetime
) -> Alert:
    """Hold one of the target's own alerts until `until`."""
    alert = await _own_alert(session=session, target=target, alert_id=alert_id)
    alert.muted_until = until
    await session.flush()
    return alert


async def set_active_alerts(
    *, session: AsyncSession, target: Target, active_ids: Collection[int]
) -> None:
    """Switch the target's alerts on (ids in `active_ids`) and off (the others)."""
    await session.execute(
        update(Alert)
        .where(col(Alert.target_id) == target.id)
        .values(active=col(Alert.id).in_(list(active_ids) or [-1])),
        execution_options={"synchronize_session": False},
    )


async def restore_alert(
    *,
    session: AsyncSession,
    target: Target,
    query: str,
    active: bool,
    muted_until: datetime | None,
    created_at: datetime | None,
) -> bool:
    """An alert as a backup describes it, unless the target has the same query already
    (so importing one backup twice adds nothing)."""
    same = await session.execute(
        select(col(Alert.id)).where(col(Alert.target_id) == target.id, col(Alert.query) == query)
    )
    if same.first() is not None:
        return False
    assert target.id is not None
    session.add(
        Alert(target_id=target.id, query=query, active=active, muted_until=muted_until,
              created_at=created_at or utcnow())
    )  # fmt: skip
    await session.flush()
    return True
