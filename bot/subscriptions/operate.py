"""What operators change from the CLI: endpoint targets, follows by id, forgetting a person.

Each function calls the owners of the tables it touches (targets → bot.outbox.targets,
follows → follows.py, people → people.py); keyword-only, explicit `session`, the caller
commits. URL checks live with their platform and are done by the caller first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.lookup import find_topic
from bot.errors import PapertideError
from bot.outbox.queue import cancel_queued
from bot.outbox.targets import (
    delete_targets,
    disable_target,
    enable_target,
    get_or_create_target,
    unlink_person,
)
from bot.store.models import Person, Target, Topic
from bot.subscriptions import follows, people
from bot.subscriptions.directory import NoSuchRow
from bot.types import Platform, TargetKind

log = logging.getLogger(__name__)

ENDPOINT_PLATFORMS = (Platform.WEBHOOK, Platform.APPRISE)


class OperatorError(PapertideError):
    """A CLI request that cannot be done as asked (one line)."""


async def add_endpoint_target(
    *, session: AsyncSession, platform: Platform, address: str
) -> tuple[Target, bool]:
    """A webhook or Apprise target for an already checked URL; (target, created?)."""
    if platform not in ENDPOINT_PLATFORMS:
        raise OperatorError(
            f"{platform} targets are created by their app (/papers follow), not here"
        )
    existing = await session.execute(
        select(Target).where(
            col(Target.platform) == str(platform),
            col(Target.workspace) == "",
            col(Target.address) == address,
        )
    )
    if (found := existing.scalar_one_or_none()) is not None:
        return found, False
    target = await get_or_create_target(
        session=session, platform=platform, workspace="", address=address, kind=TargetKind.CHANNEL
    )
    log.info("operator.target_added", extra={"target_id": target.id, "platform": str(platform)})
    return target, True


async def get_target(*, session: AsyncSession, target_id: int) -> Target:
    """The target with this id, or NoSuchRow."""
    target = await session.get(Target, target_id)
    if target is None:
        raise NoSuchRow(f"no target #{target_id} (see `papertide targets list`)")
    return target


async def set_target_enabled(
    *, session: AsyncSession, target_id: int, enabled: bool, reason: str = "disabled by operator"
) -> bool:
    """Enable or disable a target; False when it already was. Disabling kills what is
    still queued for it (sending resumes with new messages after `enable`)."""
    target = await get_target(session=session, target_id=target_id)
    if enabled:
        if target.disabled_at is None:
            return False
        await enable_target(session=session, target=target)
        return True
    changed = await disable_target(
        session=session, target_id=target_id, reason=reason, failure=False
    )
    if changed:
        await cancel_queued(session=session, target_id=target_id, reason=reason)
    return changed


async def remove_target(*, session: AsyncSession, target_id: int) -> None:
    """Delete a target with its follows, alerts and messages."""
    await get_target(session=session, target_id=target_id)
    await delete_targets(session=session, ids=[target_id])


async def _topic(session: AsyncSession, slug: str) -> Topic:
    return await find_topic(session=session, text=slug)


async def follow(*, session: AsyncSession, target_id: int, topic: str) -> bool:
    """Make a target follow a topic (slug or name); False if it already did."""
    target = await get_target(session=session, target_id=target_id)
    return await follows.follow_topic(
        session=session, target=target, topic=await _topic(session, topic)
    )


async def unfollow(*, session: AsyncSession, target_id: int, topic: str) -> bool:
    """Stop a target following a topic; False if it did not."""
    target = await get_target(session=session, target_id=target_id)
    return await follows.unfollow_topic(
        session=session, target=target, topic=await _topic(session, topic)
    )


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What forgetting a person erased."""

    email: str
    targets: int
    follows: int


async def forget_person(*, session: AsyncSession, email: str) -> Forgotten:
    """Erase a person and everything linked to them (a data-protection request): their
    mailbox and their chat DM targets, with those targets' follows, alerts and queued
    and sent messages (ON DELETE CASCADE), then the person. Channels are the
    workspace's, not the person's: one that was linked is only unlinked."""
    person = await people.find_person(session=session, email=email, lock=True)
    if person is None:
        raise NoSuchRow(f"no person with the address {email!r}")
    assert person.id is not None
    linked = await session.execute(
        select(Target).where(
            (col(Target.person_id) == person.id)
            | ((col(Target.platform) == str(Platform.EMAIL)) & (col(Target.address) == email))
        )
    )
    personal = [int(t.id or 0) for t in linked.scalars() if t.kind != str(TargetKind.CHANNEL)]
    erased_follows = await follows.delete_follows_of(session=session, target_ids=personal)
    await delete_targets(session=session, ids=personal)
    await unlink_person(session=session, person_id=person.id)
    await people.delete_person_row(session=session, person=person)
    log.info("operator.person_forgotten", extra={"person_id": person.id, "targets": len(personal)})
    return Forgotten(email=email, targets=len(personal), follows=erased_follows)


async def find_person_id(*, session: AsyncSession, email: str) -> int | None:
    """The id of the person with this address, if any."""
    found = await session.execute(select(col(Person.id)).where(col(Person.email) == email))
    return found.scalar_one_or_none()
