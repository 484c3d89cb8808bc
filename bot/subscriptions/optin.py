"""Email subscriptions: double opt-in, confirm, unsubscribe, leave for good.

Keyword-only functions taking an explicit `session`; they flush but never commit, so
the caller (a web handler, a chat command) owns the transaction.

Privacy decision: a request for an address that already receives the digest gets a
mail ("you already receive it, here is your manage link") instead of a confirmation,
and the web page reads the same in every case. Only the mailbox owner learns the
address's state; nobody can probe it from the page.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.config import Settings
from bot.errors import PapertideError
from bot.outbox.queue import enqueue, message_key
from bot.store.models import Alert, OutboxRow, Person, Subscription, Target, Topic
from bot.subscriptions.follows import DigestRequest, RequestDigest
from bot.subscriptions.mails import already_mail, confirm_mail
from bot.subscriptions.preferences import (
    PreferenceError,
    UnknownTopicError,
    email_target,
    find_topic,
    subscribe_target,
    update_preferences,
)
from bot.subscriptions.tokens import TokenData, TokenError, make_token, read_token
from bot.timeutil import utcnow
from bot.types import MessageKind, Platform

log = logging.getLogger(__name__)

# update_preferences and its errors are re-exported: callers need only this module.
__all__ = [
    "AddressError",
    "PreferenceError",
    "SubscribeResult",
    "UnknownTopicError",
    "confirm",
    "delete_person",
    "load_owner",
    "normalize_address",
    "request_subscription",
    "resume",
    "unsubscribe",
    "update_preferences",
]

RATE_WINDOW = timedelta(hours=1)
_LOCAL = re.compile(r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")


class AddressError(PapertideError):
    """An email address was refused; the message says why, on one line."""


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    person_id: int
    email: str
    # "confirmation_sent" | "already_subscribed_sent" | "rate_limited"
    action: str


def normalize_address(raw: str) -> str:
    """Validate an address and lower-case its domain; raise AddressError otherwise."""
    if "\r" in raw or "\n" in raw:
        raise AddressError("An email address is one line: remove the line break and what follows.")
    address = raw.strip()
    if not address:
        raise AddressError("Enter an email address, like name@example.org.")
    if any(not ch.isprintable() or ch.isspace() for ch in address):
        raise AddressError("An email address has no spaces or control characters.")
    if address.count("@") != 1:
        raise AddressError("An email address has exactly one @, like name@example.org.")
    local, domain = address.split("@")
    if not local or len(local) > 64 or not _LOCAL.match(local):
        raise AddressError("The part before the @ is not a valid mailbox name.")
    try:
        domain = domain.lower().encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise AddressError("The part after the @ is not a valid domain.") from exc
    labels = domain.split(".")
    if len(labels) < 2 or not all(_LABEL.match(lb) for lb in labels) or labels[-1].isdigit():
        raise AddressError("The part after the @ is not a valid domain, like example.org.")
    normalized = f"{local}@{domain}"
    if len(normalized) > 254:
        raise AddressError("That email address is too long.")
    return normalized


def link(settings: Settings, path: str) -> str:
    """An absolute link under `settings.public_url`."""
    return settings.public_url.rstrip("/") + path


async def _get_or_create_person(*, session: AsyncSession, email: str, settings: Settings) -> Person:
    stmt = select(Person).where(col(Person.email) == email).with_for_update()
    person = (await session.execute(stmt)).scalar_one_or_none()
    if person is not None:
        return person
    person = Person(
        email=email,
        email_status="pending",
        timezone=settings.digest_timezone,
        digest_weekday=settings.digest_weekday,
        digest_hour=settings.digest_hour,
    )
    try:
        async with session.begin_nested():
            session.add(person)
    except IntegrityError:
        # Someone else created it between our SELECT and INSERT: use theirs.
        person = (await session.execute(stmt)).scalar_one()
    return person


async def request_subscription(
    *,
    session: AsyncSession,
    email: str,
    settings: Settings,
    now: datetime,
    topic_slug: str | None = None,
) -> SubscribeResult:
    """Start double opt-in for `email`: at most one mail per address per hour.

    New and pending addresses get a confirmation link (carrying the topic, if any);
    confirmed addresses get their manage link instead; unsubscribed ones confirm again.
    """
    address = normalize_address(email)
    topic = await find_topic(session=session, slug=topic_slug) if topic_slug else None
    person = await _get_or_create_person(session=session, email=address, settings=settings)
    target = await email_target(session=session, person=person)
    assert person.id is not None
    assert target.id is not None
    if topic is not None and person.email_status in ("none", "pending"):
        # Harmless before confirmation: nothing is mailed to a pending address.
        await subscribe_target(session=session, target=target, topic=topic)
    if person.confirm_sent_at is not None and now - person.confirm_sent_at < RATE_WINDOW:
        log.info("subscribe.rate_limited", extra={"person_id": person.id})
        return SubscribeResult(person.id, address, "rate_limited")
    topic_name = topic.name if topic is not None else None
    if person.email_status == "confirmed":
        token = make_token(settings, person_id=person.id, email=address, purpose="manage")
        payload = already_mail(
            to=address, manage_url=link(settings, f"/manage/{token}"), topic_name=topic_name
        )
        action = "already_subscribed_sent"
    else:
        token = make_token(
            settings, person_id=person.id, email=address, purpose="confirm", topic_slug=topic_slug
        )
        payload = confirm_mail(
            to=address,
            confirm_url=link(settings, f"/confirm/{token}"),
            topic_name=topic_name,
            ttl_hours=settings.confirm_ttl_hours,
        )
        action = "confirmation_sent"
    # The hour bucket in the key makes the database refuse a second mail in the same
    # hour even if two requests race past the confirm_sent_at check.
    key = message_key(target.id, MessageKind.CONFIRM, now.strftime("%Y-%m-%dT%H"))
    inserted = await enqueue(
        session=session, target_id=target.id, kind=MessageKind.CONFIRM, key=key, payload=payload
    )
    if not inserted:
        return SubscribeResult(person.id, address, "rate_limited")
    person.confirm_sent_at = now
    session.add(person)
    await session.flush()
    log.info("subscribe.mail_queued", extra={"person_id": person.id, "action": action})
    return SubscribeResult(person.id, address, action)


async def load_owner(*, session: AsyncSession, data: TokenData) -> Person:
    """The person a token names, provided the address still belongs to them."""
    person = await session.get(Person, data.person_id, with_for_update=True)
    if person is None:
        raise TokenError(
            "This address is no longer on our list; subscribe again from a topic page.",
            reason="recipient",
        )
    if person.email != data.email:
        raise TokenError(
            "This link belongs to another address; use the link from your own mail.",
            reason="recipient",
        )
    return person


async def confirm(
    *, session: AsyncSession, token: str, settings: Settings, now: datetime
) -> Person:
    """Confirm the address a confirmation token names (idempotent)."""
    data = read_token(settings, token, purpose="confirm", now=now)
    person = await load_owner(session=session, data=data)
    target = await email_target(session=session, person=person)
    if person.email_status != "confirmed":
        person.email_status = "confirmed"
        person.confirmed_at = now
    target.disabled_at = None
    target.disabled_reason = None
    if data.topic_slug:
        topic = (
            await session.execute(select(Topic).where(col(Topic.slug) == data.topic_slug))
        ).scalar_one_or_none()
        if topic is not None:
            await subscribe_target(session=session, target=target, topic=topic)
    session.add_all([person, target])
    await session.flush()
    log.info("subscribe.confirmed", extra={"person_id": person.id})
    return person


async def stop_mail(*, session: AsyncSession, person: Person, now: datetime) -> None:
    """Mark the person unsubscribed and cancel every mail still queued for them."""
    target = await email_target(session=session, person=person)
    person.email_status = "unsubscribed"
    target.disabled_at = now
    target.disabled_reason = "unsubscribed"
    session.add_all([person, target])
    # "No mail from the next send on": queued rows die here, not at the worker.
    await session.execute(
        update(OutboxRow)
        .where(
            col(OutboxRow.target_id) == target.id, col(OutboxRow.status).in_(("pending", "held"))
        )
        .values(status="dead", last_error="unsubscribed")
    )
    await session.flush()
    log.info("subscribe.unsubscribed", extra={"person_id": person.id})


async def unsubscribe(
    *, session: AsyncSession, token: str, settings: Settings, now: datetime
) -> Person | None:
    """Unsubscribe the address an unsubscribe token names; None if it already left."""
    data = read_token(settings, token, purpose="unsubscribe", now=now)
    person = await session.get(Person, data.person_id, with_for_update=True)
    if person is None:
        return None  # left for good already: nothing to stop, and that is success
    if person.email != data.email:
        raise TokenError(
            "This link belongs to another address; use the link from your own mail.",
            reason="recipient",
        )
    if person.email_status != "unsubscribed":
        await stop_mail(session=session, person=person, now=now)
    return person


async def resume(*, session: AsyncSession, person: Person, now: datetime) -> None:
    """Turn the digest back on for a person who proved ownership with a manage link."""
    target = await email_target(session=session, person=person)
    person.email_status = "confirmed"
    person.confirmed_at = person.confirmed_at or now
    target.disabled_at = None
    target.disabled_reason = None
    session.add_all([person, target])
    await session.flush()


async def delete_person(*, session: AsyncSession, person_id: int) -> bool:
    """Leave for good: the person, their mailbox, its subscriptions, alerts and mail.

    Chat targets linked to the person stay (they belong to the chat workspace) but are
    unlinked. False when there was nobody to delete.
    """
    person = await session.get(Person, person_id)
    if person is None:
        return False
    mine = (col(Target.platform) == str(Platform.EMAIL)) & (
        (col(Target.person_id) == person_id) | (col(Target.address) == person.email)
    )
    targets = select(col(Target.id)).where(mine)
    for table in (Subscription, Alert, OutboxRow):
        await session.execute(delete(table).where(table.target_id.in_(targets)))  # type: ignore[attr-defined]
    await session.execute(delete(Target).where(mine))
    await session.execute(
        update(Target).where(col(Target.person_id) == person_id).values(person_id=None)
    )
    await session.delete(person)
    await session.flush()
    log.info("subscribe.deleted", extra={"person_id": person_id})
    return True


_CHAT_REPLIES = {
    "confirmation_sent": "Check {email}: one click in the mail we sent starts your digest.",
    "already_subscribed_sent": "We sent {email} a link to manage your weekly digest.",
    "rate_limited": "We already mailed {email} in the last hour; check that inbox (and its spam).",
}


def chat_digest_hook(settings: Settings) -> RequestDigest:
    """The chat command `digest <email>`: the same double opt-in as the web page."""

    async def hook(session: AsyncSession, email: str) -> DigestRequest:
        result = await request_subscription(
            session=session, email=email, settings=settings, now=utcnow()
        )
        return DigestRequest(
            result.person_id, _CHAT_REPLIES[result.action].format(email=result.email)
        )

    return hook
