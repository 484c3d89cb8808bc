"""Digest preferences of an email recipient: topics, schedule, alerts.

Keyword-only functions taking an explicit `session`; they flush, the caller commits.
Shared by the subscription flow (bot/subscribe.py) and the manage page.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.errors import PapertideError
from bot.store.models import Alert, Person, Subscription, Target, Topic
from bot.subscriptions.follows import get_or_create_target
from bot.types import Platform, TargetKind

log = logging.getLogger(__name__)


class UnknownTopicError(PapertideError):
    """A topic slug names no active topic."""


class PreferenceError(PapertideError):
    """A digest preference (weekday, hour, time zone) is out of range."""


async def find_topic(*, session: AsyncSession, slug: str) -> Topic:
    """The active topic `slug`, or UnknownTopicError."""
    topic = (
        await session.execute(
            select(Topic).where(col(Topic.slug) == slug, col(Topic.active).is_(True))
        )
    ).scalar_one_or_none()
    if topic is None:
        raise UnknownTopicError(f"There is no topic called {slug!r}.")
    return topic


async def email_target(*, session: AsyncSession, person: Person) -> Target:
    """The person's mailbox target, created on first use (one insert-ignore, no race)."""
    assert person.id is not None
    assert person.email is not None
    target = await get_or_create_target(
        session=session,
        platform=Platform.EMAIL,
        workspace="",
        address=person.email,
        kind=TargetKind.EMAIL,
    )
    if target.person_id is None:
        target.person_id = person.id
        await session.flush()
    return target


async def subscribe_target(*, session: AsyncSession, target: Target, topic: Topic) -> None:
    exists = await session.execute(
        select(col(Subscription.id)).where(
            col(Subscription.target_id) == target.id, col(Subscription.topic_id) == topic.id
        )
    )
    if exists.scalar_one_or_none() is None:
        assert target.id is not None
        assert topic.id is not None
        try:
            async with session.begin_nested():
                session.add(Subscription(target_id=target.id, topic_id=topic.id))
        except IntegrityError:
            pass  # a concurrent request added the same subscription


@dataclass(frozen=True, slots=True)
class Preferences:
    """What the manage page shows and edits."""

    topics: tuple[str, ...]  # subscribed slugs
    weekday: int
    hour: int
    timezone: str
    send_quiet_week: bool
    alerts: tuple[tuple[int, str, bool], ...]  # (id, query, active)


async def load_preferences(*, session: AsyncSession, person: Person) -> Preferences:
    """The person's digest preferences, topics and alerts."""
    target = await email_target(session=session, person=person)
    slugs = await session.execute(
        select(col(Topic.slug))
        .join(Subscription, col(Subscription.topic_id) == col(Topic.id))
        .where(col(Subscription.target_id) == target.id)
        .order_by(col(Topic.slug))
    )
    alerts = await session.execute(
        select(col(Alert.id), col(Alert.query), col(Alert.active))
        .where(col(Alert.target_id) == target.id)
        .order_by(col(Alert.id))
    )
    return Preferences(
        topics=tuple(slugs.scalars()),
        weekday=person.digest_weekday,
        hour=person.digest_hour,
        timezone=person.timezone,
        send_quiet_week=person.send_quiet_week,
        alerts=tuple((int(i or 0), str(q), bool(a)) for i, q, a in alerts.all()),
    )


def check_schedule(*, weekday: int, hour: int, timezone: str) -> None:
    """Raise PreferenceError unless weekday, hour and time zone are valid."""
    if not 0 <= weekday <= 6:
        raise PreferenceError("Pick a weekday from Monday to Sunday.")
    if not 0 <= hour <= 23:
        raise PreferenceError("Pick an hour from 00:00 to 23:00.")
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise PreferenceError(f"Unknown time zone {timezone!r}; pick one from the list.") from exc


async def update_preferences(
    *,
    session: AsyncSession,
    person: Person,
    topics: Sequence[str],
    weekday: int,
    hour: int,
    timezone: str,
    send_quiet_week: bool,
    active_alert_ids: Collection[int] | None = None,
) -> Preferences:
    """Replace the person's topics and schedule; `active_alert_ids` switches alerts."""
    check_schedule(weekday=weekday, hour=hour, timezone=timezone)
    wanted = set(topics)
    rows = (
        await session.execute(
            select(Topic).where(col(Topic.slug).in_(wanted), col(Topic.active).is_(True))
        )
    ).scalars()
    found = {t.slug: t for t in rows}
    if missing := sorted(wanted - found.keys()):
        raise UnknownTopicError(f"There is no topic called {missing[0]!r}.")
    target = await email_target(session=session, person=person)
    await session.execute(
        delete(Subscription).where(
            col(Subscription.target_id) == target.id,
            col(Subscription.topic_id).not_in([t.id for t in found.values()]),
        )
    )
    for topic in found.values():
        await subscribe_target(session=session, target=target, topic=topic)
    if active_alert_ids is not None:
        alerts = (
            await session.execute(select(Alert).where(col(Alert.target_id) == target.id))
        ).scalars()
        for alert in alerts:
            alert.active = alert.id in active_alert_ids
            session.add(alert)
    person.digest_weekday, person.digest_hour = weekday, hour
    person.timezone, person.send_quiet_week = timezone, send_quiet_week
    session.add(person)
    await session.flush()
    log.info("subscribe.preferences", extra={"person_id": person.id, "topics": len(found)})
    return await load_preferences(session=session, person=person)
