"""Who in a workspace follows a topic (`/papers who`), and whether a person shows.

A person's chat target carries `settings["visible"]`; absent means hidden, so nobody
appears in `/papers who` until they chose to. Channels belong to the workspace and
are always listed. Disabled targets (bot removed, channel gone) are left out.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.outbox.targets import set_settings
from bot.store.models import Subscription, Target, Topic
from bot.types import Platform, TargetKind


async def followers_here(
    *, session: AsyncSession, platform: Platform, workspace: str, topic: Topic
) -> tuple[list[str], list[str]]:
    """(channel addresses, visible user addresses) of the workspace that follow `topic`."""
    rows = await session.execute(
        select(Target)
        .join(Subscription, col(Subscription.target_id) == col(Target.id))
        .where(
            col(Subscription.topic_id) == topic.id,
            col(Target.platform) == str(platform),
            col(Target.workspace) == workspace,
            col(Target.disabled_at).is_(None),
        )
        .order_by(col(Target.address))
    )
    channels, people = [], []
    for target in rows.scalars():
        if target.kind == str(TargetKind.CHANNEL):
            channels.append(target.address)
        elif target.kind == str(TargetKind.USER) and target.settings.get("visible") is True:
            people.append(target.address)
    return channels, people


async def set_visible(*, session: AsyncSession, target: Target, visible: bool) -> None:
    """Show (or hide) this person in `/papers who`."""
    await set_settings(session=session, target=target, visible=True if visible else None)
