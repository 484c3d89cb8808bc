"""Chat-side data access: targets, follows, alerts, mutes, quiet hours, digest requests.

Keyword-only functions taking an explicit `session`; the caller commits. Every lookup
goes through a `Target` the caller resolved from its own (platform, workspace, address),
so one workspace can never see or change another's rows.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.store.dialect import insert_ignore
from bot.store.models import Alert, Person, ProcessedEvent, Subscription, Target, Topic
from bot.timeutil import utcnow
from bot.types import Platform, TargetKind


@dataclass(frozen=True, slots=True)
class DigestRequest:
    """What a digest request did: the person it is for and the reply to show."""

    person_id: int
    reply: str


# (session, address as typed) -> DigestRequest; raises a PapertideError for a bad address.
RequestDigest = Callable[[AsyncSession, str], Awaitable[DigestRequest]]

_EMAIL = re.compile(r"^[^@\s<>\"',;]{1,64}@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


class TopicNotFound(PapertideError):
    """No topic by that slug or name; `suggestions` are the closest slugs."""

    def __init__(self, text: str, suggestions: list[str]) -> None:
        super().__init__(f"no topic {text!r}")
        self.text = text
        self.suggestions = suggestions


class NoSuchAlert(PapertideError):
    """The alert id is unknown, or belongs to someone else (we never say which)."""


class NotFollowing(PapertideError):
    """The target does not follow that topic."""


async def get_or_create_target(
    *, session: AsyncSession, platform: Platform, workspace: str, address: str, kind: TargetKind
) -> Target:
    """The target for (platform, workspace, address), created on first use.

    INSERT … ON CONFLICT DO NOTHING first, so two concurrent commands still yield one row.
    """
    await session.execute(
        insert_ignore(
            session,
            Target,
            platform=str(platform),
            kind=str(kind),
            workspace=workspace,
            address=address,
            settings={},
            failure_count=0,
            created_at=utcnow(),
        )
    )
    found = await session.execute(
        select(Target).where(
            col(Target.platform) == str(platform),
            col(Target.workspace) == workspace,
            col(Target.address) == address,
        )
    )
    return found.scalar_one()


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


async def find_topic(*, session: AsyncSession, text: str) -> Topic:
    """An active topic by slug or name, case-insensitively; TopicNotFound with suggestions."""
    wanted = text.strip().lower()
    found = await session.execute(
        select(Topic).where(
            col(Topic.active).is_(True),
            or_(func.lower(col(Topic.slug)) == wanted, func.lower(col(Topic.name)) == wanted),
        )
    )
    topic = found.scalars().first()
    if topic is not None:
        return topic
    rows = (
        await session.execute(
            select(col(Topic.slug), col(Topic.name)).where(col(Topic.active).is_(True))
        )
    ).all()
    by_key = {slug.lower(): slug for slug, _ in rows}
    by_key.update({name.lower(): slug for slug, name in rows})
    close = difflib.get_close_matches(wanted, list(by_key), n=6, cutoff=0.5)
    suggestions = list(dict.fromkeys(by_key[c] for c in close))[:3]
    raise TopicNotFound(text, suggestions)


async def list_topics(*, session: AsyncSession, words: str = "") -> list[Topic]:
    """Active topics whose slug, name or description contains every word."""
    stmt = select(Topic).where(col(Topic.active).is_(True)).order_by(col(Topic.name))
    for word in words.lower().split():
        pattern = f"%{word.replace('%', '').replace('_', '')}%"
        stmt = stmt.where(
            or_(
                func.lower(col(Topic.slug)).like(pattern),
                func.lower(col(Topic.name)).like(pattern),
                func.lower(col(Topic.description)).like(pattern),
            )
        )
    return list((await session.execute(stmt)).scalars())


async def follow_topic(*, session: AsyncSession, target: Target, topic: Topic) -> bool:
    """Subscribe; False when the target already followed the topic."""
    result = await session.execute(
        insert_ignore(
            session, Subscription, target_id=target.id, topic_id=topic.id, created_at=utcnow()
        ).returning(col(Subscription.id))
    )
    return result.scalar_one_or_none() is not None


async def unfollow_topic(*, session: AsyncSession, target: Target, topic: Topic) -> bool:
    """Unsubscribe; False when the target did not follow the topic."""
    result = await session.execute(
        delete(Subscription)
        .where(col(Subscription.target_id) == target.id, col(Subscription.topic_id) == topic.id)
        .returning(col(Subscription.id))
    )
    return result.first() is not None


async def list_subscriptions(
    *, session: AsyncSession, target: Target
) -> list[tuple[Subscription, Topic]]:
    """The target's follows with their topics, by topic name."""
    rows = await session.execute(
        select(Subscription, Topic)
        .join(Topic, col(Topic.id) == col(Subscription.topic_id))
        .where(col(Subscription.target_id) == target.id)
        .order_by(col(Topic.name))
    )
    return [(sub, topic) for sub, topic in rows.all()]


async def list_alerts(*, session: AsyncSession, target: Target) -> list[Alert]:
    """The target's active alerts, oldest first."""
    rows = await session.execute(
        select(Alert)
        .where(col(Alert.target_id) == target.id, col(Alert.active).is_(True))
        .order_by(col(Alert.id))
    )
    return list(rows.scalars())


async def add_alert(*, session: AsyncSession, target: Target, query: str) -> Alert:
    """Store a (validated) alert query for a user target."""
    assert target.id is not None
    alert = Alert(target_id=target.id, query=query, active=True, created_at=utcnow())
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


async def mute_topic(
    *, session: AsyncSession, target: Target, topic: Topic, until: datetime
) -> None:
    """Hold a followed topic's papers for this target until `until`."""
    result = await session.execute(
        update(Subscription)
        .where(col(Subscription.target_id) == target.id, col(Subscription.topic_id) == topic.id)
        .values(muted_until=until)
        .returning(col(Subscription.id))
    )
    if result.first() is None:
        raise NotFollowing(f"not following {topic.slug}")


def set_setting(target: Target, **changes: Any) -> None:
    """Change keys of `Target.settings` (None removes); reassigned so the ORM sees it."""
    merged = {**target.settings, **changes}
    target.settings = {k: v for k, v in merged.items() if v is not None}


async def set_quiet_hours(
    *, session: AsyncSession, target: Target, hours: tuple[int, int] | None, timezone: str | None
) -> None:
    """Store `settings["quiet_hours"] = "22-07"` (and the time zone), or clear them."""
    text = None if hours is None else f"{hours[0]:02d}-{hours[1]:02d}"
    set_setting(target, quiet_hours=text, **({"timezone": timezone} if timezone else {}))
    await session.flush()


def is_email(text: str) -> bool:
    """A plausible single mailbox (no display name, no header tricks)."""
    return len(text) <= 254 and bool(_EMAIL.match(text))


async def store_digest_request(session: AsyncSession, email: str) -> DigestRequest:
    """Fallback digest hook: keep the request unconfirmed and send nothing.

    Production wires `bot.subscribe.chat_digest_hook`, which also mails the confirmation.
    """
    found = await session.execute(
        select(Person).where(func.lower(col(Person.email)) == email.lower())
    )
    person = found.scalar_one_or_none()
    if person is None:
        person = Person(email=email, email_status="pending", created_at=utcnow())
        session.add(person)
        await session.flush()
    elif person.email_status in ("none", "unsubscribed"):
        person.email_status = "pending"
    assert person.id is not None
    reply = f"Noted: the weekly digest for {email} starts once the address is confirmed."
    return DigestRequest(person.id, reply)


async def request_digest(
    *, session: AsyncSession, target: Target, email: str, hook: RequestDigest
) -> str:
    """Start the email digest for the user behind `target` and link them to that person."""
    result = await hook(session, email.strip())
    target.person_id = result.person_id
    await session.flush()
    return result.reply


async def stop_digest(*, session: AsyncSession, target: Target) -> bool:
    """Unsubscribe the linked person from the digest; False when there was none."""
    if target.person_id is None:
        return False
    person = await session.get(Person, target.person_id)
    if person is None or person.email_status in ("none", "unsubscribed"):
        return False
    person.email_status = "unsubscribed"
    await session.flush()
    return True


async def disable_targets(
    *, session: AsyncSession, platform: Platform, workspace: str, address: str | None, reason: str
) -> int:
    """Disable a workspace's targets (or one address) when the platform says they are gone."""
    stmt = update(Target).where(
        col(Target.platform) == str(platform),
        col(Target.workspace) == workspace,
        col(Target.disabled_at).is_(None),
    )
    if address is not None:
        stmt = stmt.where(col(Target.address) == address)
    result = await session.execute(
        stmt.values(disabled_at=utcnow(), disabled_reason=reason).returning(col(Target.id))
    )
    return len(result.all())


async def claim_event(*, session: AsyncSession, platform: Platform, event_id: str) -> bool:
    """Record a platform event id; False when it was seen before (a retried delivery)."""
    result = await session.execute(
        insert_ignore(
            session, ProcessedEvent, event_id=event_id, platform=str(platform), seen_at=utcnow()
        ).returning(col(ProcessedEvent.event_id))
    )
    return result.scalar_one_or_none() is not None
