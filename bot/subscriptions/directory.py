"""What operators see: targets, follows and people as JSON-ready rows (reads only).

`papertide targets list`, `subscriptions list` and `people list|show` print these;
`--json` prints them as they are. Addresses that hold secrets (Apprise and webhook
URLs) are shown through an injected `mask` (the CLI passes Apprise's privacy form).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.store.models import Alert, Person, Subscription, Target, Topic
from bot.types import Platform

Mask = Callable[[str, str], str]  # (platform, address) -> what a listing shows


class TargetRow(TypedDict):
    id: int
    platform: str
    kind: str
    workspace: str
    address: str
    person: str | None
    follows: list[str]
    alerts: int
    disabled: bool
    disabled_reason: str | None
    created_at: str


class FollowRow(TypedDict):
    target_id: int
    platform: str
    workspace: str
    address: str
    topic: str
    muted_until: str | None
    created_at: str


class AlertRow(TypedDict):
    id: int
    target_id: int
    query: str
    active: bool


class PersonRow(TypedDict):
    id: int
    email: str | None
    email_status: str
    timezone: str
    digest: str  # "Mon 08:00"
    targets: int
    created_at: str


class PersonDetail(PersonRow):
    linked_targets: list[TargetRow]
    alerts: list[AlertRow]


def no_mask(_platform: str, address: str) -> str:
    return address


def _when(value: object) -> str:
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


class NoSuchRow(PapertideError):
    """An id or address the store does not have."""


async def target_rows(
    *,
    session: AsyncSession,
    platform: str | None = None,
    ids: list[int] | None = None,
    mask: Mask = no_mask,
) -> list[TargetRow]:
    """Targets with their person, followed slugs and alert count, by id."""
    stmt = select(Target, col(Person.email)).outerjoin(
        Person, col(Person.id) == col(Target.person_id)
    )
    if platform:
        stmt = stmt.where(col(Target.platform) == str(Platform(platform)))
    if ids is not None:
        stmt = stmt.where(col(Target.id).in_(ids or [-1]))
    found = (await session.execute(stmt.order_by(col(Target.id)))).all()
    target_ids = [t.id for t, _ in found]
    slugs: dict[int, list[str]] = {}
    subs = await session.execute(
        select(col(Subscription.target_id), col(Topic.slug))
        .join(Topic, col(Topic.id) == col(Subscription.topic_id))
        .where(col(Subscription.target_id).in_(target_ids or [-1]))
        .order_by(col(Topic.slug))
    )
    for target_id, slug in subs:
        slugs.setdefault(target_id, []).append(slug)
    counts = dict(
        (
            await session.execute(
                select(col(Alert.target_id), func.count())
                .where(col(Alert.target_id).in_(target_ids or [-1]))
                .group_by(col(Alert.target_id))
            )
        ).all()
    )
    return [
        TargetRow(
            id=int(t.id or 0), platform=t.platform, kind=t.kind, workspace=t.workspace,
            address=mask(t.platform, t.address), person=email,
            follows=slugs.get(int(t.id or 0), []), alerts=int(counts.get(int(t.id or 0)) or 0),
            disabled=t.disabled_at is not None, disabled_reason=t.disabled_reason,
            created_at=_when(t.created_at),
        )
        for t, email in found
    ]  # fmt: skip


async def follow_rows(
    *,
    session: AsyncSession,
    topic: str | None = None,
    target_id: int | None = None,
    mask: Mask = no_mask,
) -> list[FollowRow]:
    """Every follow, optionally of one topic (slug) or one target."""
    stmt = (
        select(Subscription, Target, Topic)
        .join(Target, col(Target.id) == col(Subscription.target_id))
        .join(Topic, col(Topic.id) == col(Subscription.topic_id))
    )
    if topic:
        stmt = stmt.where(col(Topic.slug) == topic)
    if target_id is not None:
        stmt = stmt.where(col(Target.id) == target_id)
    found = await session.execute(stmt.order_by(col(Topic.slug), col(Target.id)))
    return [
        FollowRow(
            target_id=int(t.id or 0), platform=t.platform, workspace=t.workspace,
            address=mask(t.platform, t.address), topic=topic_row.slug,
            muted_until=_when(s.muted_until) if s.muted_until else None,
            created_at=_when(s.created_at),
        )
        for s, t, topic_row in found.all()
    ]  # fmt: skip


_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _person_row(person: Person, targets: int) -> PersonRow:
    return PersonRow(
        id=int(person.id or 0), email=person.email, email_status=person.email_status,
        timezone=person.timezone,
        digest=f"{_DAYS[person.digest_weekday % 7]} {person.digest_hour:02d}:00",
        targets=targets, created_at=_when(person.created_at),
    )  # fmt: skip


async def person_rows(*, session: AsyncSession) -> list[PersonRow]:
    """Every person, by address, with how many targets are linked to them."""
    counts = dict(
        (
            await session.execute(
                select(col(Target.person_id), func.count())
                .where(col(Target.person_id).is_not(None))
                .group_by(col(Target.person_id))
            )
        ).all()
    )
    people = await session.execute(select(Person).order_by(col(Person.email)))
    return [_person_row(p, int(counts.get(p.id) or 0)) for p in people.scalars()]


async def person_detail(*, session: AsyncSession, email: str, mask: Mask = no_mask) -> PersonDetail:
    """One person: their digest settings, every target linked to them, their alerts."""
    person = (
        await session.execute(select(Person).where(col(Person.email) == email))
    ).scalar_one_or_none()
    if person is None:
        raise NoSuchRow(f"no person with the address {email!r}")
    linked = (
        await session.execute(select(col(Target.id)).where(col(Target.person_id) == person.id))
    ).scalars()
    targets = await target_rows(session=session, ids=[int(i or 0) for i in linked], mask=mask)
    alerts = await session.execute(
        select(Alert)
        .where(col(Alert.target_id).in_([t["id"] for t in targets] or [-1]))
        .order_by(col(Alert.id))
    )
    return PersonDetail(
        **_person_row(person, len(targets)),
        linked_targets=targets,
        alerts=[
            AlertRow(id=int(a.id or 0), target_id=a.target_id, query=a.query, active=a.active)
            for a in alerts.scalars()
        ],
    )
