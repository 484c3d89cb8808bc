"""Digest preferences of an email recipient: topics, schedule, alerts (the manage page).

Keyword-only functions taking an explicit `session`; they flush, the caller commits.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.catalog.lookup import TopicNotFound
from bot.errors import PapertideError
from bot.store.models import Person, Topic
from bot.subscriptions import people
from bot.subscriptions.alerts import list_alerts, set_active_alerts
from bot.subscriptions.follows import followed_slugs, set_follows

log = logging.getLogger(__name__)


class PreferenceError(PapertideError):
    """A digest preference (weekday, hour, time zone) is out of range."""


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
    target = await people.mailbox_of(session=session, person=person)
    alerts = await list_alerts(session=session, target=target, include_inactive=True)
    return Preferences(
        topics=await followed_slugs(session=session, target=target),
        weekday=person.digest_weekday,
        hour=person.digest_hour,
        timezone=person.timezone,
        send_quiet_week=person.send_quiet_week,
        alerts=tuple((int(a.id or 0), a.query, bool(a.active)) for a in alerts),
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
    found = {
        t.slug: t
        for t in (
            await session.execute(
                select(Topic).where(col(Topic.slug).in_(wanted), col(Topic.active).is_(True))
            )
        ).scalars()
    }
    if missing := sorted(wanted - found.keys()):
        raise TopicNotFound(missing[0], [])
    target = await people.mailbox_of(session=session, person=person)
    await set_follows(session=session, target=target, topics=list(found.values()))
    if active_alert_ids is not None:
        await set_active_alerts(session=session, target=target, active_ids=active_alert_ids)
    await people.set_schedule(
        session=session,
        person=person,
        weekday=weekday,
        hour=hour,
        timezone=timezone,
        send_quiet_week=send_quiet_week,
    )
    log.info("subscribe.preferences", extra={"person_id": person.id, "topics": len(found)})
    return await load_preferences(session=session, person=person)
