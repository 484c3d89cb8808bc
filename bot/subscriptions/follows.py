"""The `subscription` table's one writer: which target follows which topic, and how a
target receives what it follows (mutes, quiet hours).

Keyword-only functions taking an explicit `session`; the caller commits. Every call
goes through a `Target` the caller resolved from its own (platform, workspace, address),
so one workspace can never see or change another's rows.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, time

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.outbox.quiet_hours import format_quiet_hours
from bot.outbox.targets import set_settings
from bot.store.dialect import insert_ignore
from bot.store.models import Subscription, Target, Topic
from bot.timeutil import utcnow


class NotFollowing(PapertideError):
    """The target does not follow that topic."""


async def follow_topic(*, session: AsyncSession, target: Target, topic: Topic) -> bool:
    """Subscribe; False when the target already followed the topic.

    INSERT … ON CONFLICT DO NOTHING: two concurrent follows still yield one row.
    """
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


async def set_follows(*, session: AsyncSession, target: Target, topics: Collection[Topic]) -> None:
    """Make the target follow exactly these topics (the manage page's checkboxes)."""
    await session.execute(
        delete(Subscription).where(
            col(Subscription.target_id) == target.id,
            col(Subscription.topic_id).not_in([t.id for t in topics]),
        )
    )
    for topic in topics:
        await follow_topic(session=session, target=target, topic=topic)


async def list_subscriptions(
    *, session: AsyncSession, target: Target
) -> list[tuple[Subscription, Topic]]:
    """The target's follows with their topics, by topic name."""
    assert target.id is not None
    return (await subscriptions_of(session=session, target_ids=[target.id]))[target.id]


async def subscriptions_of(
    *, session: AsyncSession, target_ids: Sequence[int]
) -> dict[int, list[tuple[Subscription, Topic]]]:
    """Each target's follows with their topics, by topic name, in one query."""
    found: dict[int, list[tuple[Subscription, Topic]]] = {t: [] for t in target_ids}
    if not found:
        return found
    rows = await session.execute(
        select(Subscription, Topic)
        .join(Topic, col(Topic.id) == col(Subscription.topic_id))
        .where(col(Subscription.target_id).in_(list(target_ids)))
        .order_by(col(Topic.name))
    )
    for sub, topic in rows.all():
        found[sub.target_id].append((sub, topic))
    return found


async def followed_slugs(*, session: AsyncSession, target: Target) -> tuple[str, ...]:
    """The slugs the target follows, sorted."""
    slugs = await session.execute(
        select(col(Topic.slug))
        .join(Subscription, col(Subscription.topic_id) == col(Topic.id))
        .where(col(Subscription.target_id) == target.id)
        .order_by(col(Topic.slug))
    )
    return tuple(slugs.scalars())


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


async def set_quiet_hours(
    *,
    session: AsyncSession,
    target: Target,
    hours: tuple[time, time] | None,
    timezone: str | None,
) -> None:
    """Store quiet hours (`settings["quiet_hours"] = "22-07"`, the time zone), or clear them."""
    text = None if hours is None else format_quiet_hours(*hours)
    await set_settings(
        session=session,
        target=target,
        quiet_hours=text,
        **({"timezone": timezone} if timezone else {}),
    )


async def restore_follow(
    *,
    session: AsyncSession,
    target: Target,
    topic: Topic,
    muted_until: datetime | None,
    created_at: datetime | None,
) -> bool:
    """A follow as a backup describes it, unless the target already follows the topic."""
    result = await session.execute(
        insert_ignore(
            session, Subscription, target_id=target.id, topic_id=topic.id,
            muted_until=muted_until, created_at=created_at or utcnow(),
        ).returning(col(Subscription.id))
    )  # fmt: skip
    return result.scalar_one_or_none() is not None


async def delete_follows_of(*, session: AsyncSession, target_ids: Collection[int]) -> int:
    """Every follow of these targets (a person forgotten, a target removed)."""
    result = await session.execute(
        delete(Subscription)
        .where(col(Subscription.target_id).in_(list(target_ids) or [-1]))
        .returning(col(Subscription.id))
    )
    return len(result.all())
