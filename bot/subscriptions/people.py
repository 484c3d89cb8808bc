"""The `person` table's one writer: a human recipient across platforms, their digest
status and schedule, and their mailbox target.

Keyword-only functions taking an explicit `session`; they flush, the caller commits.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Update, bindparam, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.config import Settings
from bot.outbox.targets import get_or_create_target
from bot.store.models import Person, Target, new_token_version
from bot.subscriptions.addresses import address_key
from bot.types import EmailStatus, Platform, TargetKind


async def find_person(*, session: AsyncSession, email: str, lock: bool = False) -> Person | None:
    """The person with this (normalized) address in any case, locked for update if asked."""
    stmt = select(Person).where(col(Person.email_key) == address_key(email))
    if lock:
        stmt = stmt.with_for_update()
    return (await session.execute(stmt)).scalar_one_or_none()


async def get_or_create_person(
    *,
    session: AsyncSession,
    email: str,
    settings: Settings,
    status: EmailStatus = EmailStatus.PENDING,
) -> Person:
    """The person with this address (locked), created with the default schedule."""
    person = await find_person(session=session, email=email, lock=True)
    if person is not None:
        return person
    person = Person(
        email=email,
        email_key=address_key(email),
        email_status=str(status),
        timezone=settings.digest_timezone,
        digest_weekday=settings.digest_weekday,
        digest_hour=settings.digest_hour,
    )
    try:
        async with session.begin_nested():
            session.add(person)
    except IntegrityError:
        # Someone else created it between our SELECT and INSERT: use theirs.
        found = await find_person(session=session, email=email, lock=True)
        assert found is not None
        person = found
    return person


async def mailbox_of(*, session: AsyncSession, person: Person) -> Target:
    """The person's mailbox target, created on first use and linked to them."""
    assert person.id is not None
    assert person.email is not None
    return await get_or_create_target(
        session=session,
        platform=Platform.EMAIL,
        workspace="",
        address=person.email,
        kind=TargetKind.EMAIL,
        person_id=person.id,
    )


async def set_status(
    *,
    session: AsyncSession,
    person: Person,
    status: EmailStatus,
    confirmed_at: datetime | None = None,
) -> None:
    """Move the person's digest to `status`; `confirmed_at` when (re)confirmed.

    Digests are due only for weeks that end after `confirmed_at`, so a newly confirmed
    person is not sent last week's digest in the middle of this one.
    """
    person.email_status = str(status)
    if confirmed_at is not None:
        person.confirmed_at = confirmed_at
    session.add(person)
    await session.flush()


@dataclass(frozen=True, slots=True)
class Stopped:
    """A person whose mail stops: who, their mailbox address, their token version now."""

    id: int
    email: str | None
    token_version: int


def stop_if_current(
    *,
    person_id: ColumnElement[int],
    version: ColumnElement[int],
    fresh: ColumnElement[int],
    also_returning: ColumnElement[Any] | None = None,
) -> Update:
    """The one-click unsubscribe's check and change in one indexed UPDATE: the person
    stops receiving mail and every link mailed to them is revoked (their version becomes
    `fresh`), provided `version` is still their token version and they had not stopped
    already; nothing matches otherwise. Returns id, email, token version (and
    `also_returning`, a column of a table the values come from, for a batch of clicks);
    bot.subscriptions.one_click composes it with the mailbox's statements."""
    returning: list[Any] = [col(Person.id), col(Person.email), col(Person.token_version)]
    if also_returning is not None:
        returning.append(also_returning)
    return (
        update(Person)
        .where(
            col(Person.id) == person_id,
            col(Person.token_version) == version,
            col(Person.email_status) != str(EmailStatus.UNSUBSCRIBED),
        )
        .values(email_status=str(EmailStatus.UNSUBSCRIBED), token_version=fresh)
        .returning(*returning)
    )


# One click's: parameters person_id, version, fresh (`fresh_version(version)`). Built
# once: composing the statement per click cost more than running it.
STOP_IF_CURRENT = stop_if_current(
    person_id=bindparam("person_id"), version=bindparam("version"), fresh=bindparam("fresh")
)


def fresh_version(old: int | None) -> int:
    """A new token version, never `old`: writing it revokes every link made with `old`."""
    fresh = new_token_version()
    while fresh == old:
        fresh = new_token_version()
    return fresh


async def rotate_tokens(*, session: AsyncSession, person: Person) -> None:
    """Revoke every link ever mailed to the person: their tokens carry the old version."""
    person.token_version = fresh_version(person.token_version)
    session.add(person)
    await session.flush()


async def mark_confirmation_sent(*, session: AsyncSession, person: Person, now: datetime) -> None:
    person.confirm_sent_at = now
    session.add(person)
    await session.flush()


async def set_schedule(
    *,
    session: AsyncSession,
    person: Person,
    weekday: int,
    hour: int,
    timezone: str,
    send_quiet_week: bool,
) -> None:
    """The digest's local weekday and hour, time zone, and whether quiet weeks are sent."""
    person.digest_weekday, person.digest_hour = weekday, hour
    person.timezone, person.send_quiet_week = timezone, send_quiet_week
    session.add(person)
    await session.flush()


async def delete_person_row(*, session: AsyncSession, person: Person) -> None:
    await session.delete(person)
    await session.flush()


async def restore_person(*, session: AsyncSession, values: dict[str, Any]) -> tuple[Person, bool]:
    """A person as a backup describes them, unless the address is known (then the
    existing row is kept as is); (the row, whether it was created)."""
    email = str(values["email"])
    found = await find_person(session=session, email=email)
    if found is not None:
        return found, False
    person = Person(
        email=email,
        email_key=address_key(email),
        email_status=str(EmailStatus(values.get("email_status", "none"))),
        confirm_sent_at=values.get("confirm_sent_at"),
        confirmed_at=values.get("confirmed_at"),
        timezone=str(values.get("timezone") or "UTC"),
        digest_weekday=int(values.get("digest_weekday", 0)),
        digest_hour=int(values.get("digest_hour", 8)),
        send_quiet_week=bool(values.get("send_quiet_week", True)),
    )
    if values.get("created_at") is not None:
        person.created_at = values["created_at"]
    session.add(person)
    await session.flush()
    return person, True
