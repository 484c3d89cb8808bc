"""Email subscriptions: double opt-in, confirm, unsubscribe, resume, leave for good.

Keyword-only functions taking an explicit `session`; they flush but never commit, so
the caller (a web handler, a chat command) owns the transaction. They orchestrate the
owners of the tables they touch: people, follows, outbox targets and the outbox.

Privacy decision: a request for an address that already receives the digest gets a
mail ("you already receive it, here is your manage link") instead of a confirmation,
and the web page reads the same in every case. Only the mailbox owner learns the
address's state; nobody can probe it from the page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.catalog.lookup import TopicNotFound, find_topic
from bot.config import Settings
from bot.outbox.queue import cancel_queued, enqueue, message_key
from bot.outbox.targets import (
    delete_targets,
    disable_target,
    enable_target,
    unlink_person,
)
from bot.store.models import Person, Target, Topic
from bot.subscriptions import people
from bot.subscriptions.addresses import normalize_address
from bot.subscriptions.follows import follow_topic
from bot.subscriptions.mails import already_mail, confirm_mail
from bot.subscriptions.tokens import TokenData, TokenError, make_token, read_token
from bot.subscriptions.urls import PublicUrls
from bot.types import EmailStatus, MessageKind, Platform

log = logging.getLogger(__name__)

RATE_WINDOW = timedelta(hours=1)
_NOT_YET = (EmailStatus.NONE, EmailStatus.PENDING)


class SubscribeAction(StrEnum):
    CONFIRMATION_SENT = "confirmation_sent"
    ALREADY_SUBSCRIBED_SENT = "already_subscribed_sent"
    RATE_LIMITED = "rate_limited"


@dataclass(frozen=True, slots=True)
class SubscribeResult:
    person_id: int
    email: str
    action: SubscribeAction


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
    topic = await find_topic(session=session, text=topic_slug) if topic_slug else None
    person = await people.get_or_create_person(session=session, email=address, settings=settings)
    target = await people.mailbox_of(session=session, person=person)
    assert person.id is not None
    assert target.id is not None
    if topic is not None and person.email_status in _NOT_YET:
        # Harmless before confirmation: nothing is mailed to a pending address.
        await follow_topic(session=session, target=target, topic=topic)
    if person.confirm_sent_at is not None and now - person.confirm_sent_at < RATE_WINDOW:
        log.info("subscribe.rate_limited", extra={"person_id": person.id})
        return SubscribeResult(person.id, address, SubscribeAction.RATE_LIMITED)
    urls = PublicUrls(settings.public_url)
    topic_name = topic.name if topic is not None else None
    if person.email_status == EmailStatus.CONFIRMED:
        token = make_token(settings, person_id=person.id, email=address, purpose="manage")
        payload = already_mail(to=address, manage_url=urls.manage(token), topic_name=topic_name)
        action = SubscribeAction.ALREADY_SUBSCRIBED_SENT
    else:
        token = make_token(
            settings,
            person_id=person.id,
            email=address,
            purpose="confirm",
            topic_slug=topic.slug if topic is not None else None,
        )
        payload = confirm_mail(
            to=address,
            confirm_url=urls.confirm(token),
            topic_name=topic_name,
            ttl_hours=settings.confirm_ttl_hours,
        )
        action = SubscribeAction.CONFIRMATION_SENT
    # The hour bucket in the key makes the database refuse a second mail in the same
    # hour even if two requests race past the confirm_sent_at check.
    key = message_key(target.id, MessageKind.CONFIRM, now.strftime("%Y-%m-%dT%H"))
    inserted = await enqueue(
        session=session, target_id=target.id, kind=MessageKind.CONFIRM, key=key, payload=payload
    )
    if not inserted:
        return SubscribeResult(person.id, address, SubscribeAction.RATE_LIMITED)
    await people.mark_confirmation_sent(session=session, person=person, now=now)
    log.info("subscribe.mail_queued", extra={"person_id": person.id, "action": str(action)})
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
    target = await people.mailbox_of(session=session, person=person)
    if person.email_status != EmailStatus.CONFIRMED:
        await people.set_status(
            session=session, person=person, status=EmailStatus.CONFIRMED, confirmed_at=now
        )
    await enable_target(session=session, target=target)
    if data.topic_slug:
        topic = await _active_topic(session, data.topic_slug)
        if topic is not None:
            await follow_topic(session=session, target=target, topic=topic)
    log.info("subscribe.confirmed", extra={"person_id": person.id})
    return person


async def _active_topic(session: AsyncSession, slug: str) -> Topic | None:
    try:
        return await find_topic(session=session, text=slug)
    except TopicNotFound:
        return None  # the topic left the catalog since the mail was sent


async def stop_mail(*, session: AsyncSession, person: Person, now: datetime) -> None:
    """Mark the person unsubscribed and cancel every mail still queued for them."""
    await people.set_status(session=session, person=person, status=EmailStatus.UNSUBSCRIBED)
    target = await people.find_mailbox(session=session, person=person)
    if target is not None and target.id is not None:
        await disable_target(
            session=session, target_id=target.id, reason="unsubscribed", now=now, failure=False
        )
        # "No mail from the next send on": queued rows die here, not at the worker.
        await cancel_queued(session=session, target_id=target.id, reason="unsubscribed")
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
    if person.email_status != EmailStatus.UNSUBSCRIBED:
        await stop_mail(session=session, person=person, now=now)
    return person


async def resume(*, session: AsyncSession, person: Person, now: datetime) -> None:
    """Turn the digest back on for a person who proved ownership with a manage link."""
    target = await people.mailbox_of(session=session, person=person)
    await people.set_status(
        session=session,
        person=person,
        status=EmailStatus.CONFIRMED,
        confirmed_at=person.confirmed_at or now,
    )
    await enable_target(session=session, target=target)


async def delete_person(*, session: AsyncSession, person_id: int) -> bool:
    """Leave for good: the person, their mailbox, its subscriptions, alerts and mail.

    Chat targets linked to the person stay (they belong to the chat workspace) but are
    unlinked. False when there was nobody to delete.
    """
    person = await session.get(Person, person_id)
    if person is None:
        return False
    mailboxes = await session.execute(
        select(col(Target.id)).where(
            col(Target.platform) == str(Platform.EMAIL),
            (col(Target.person_id) == person_id) | (col(Target.address) == person.email),
        )
    )
    # Follows, alerts and queued mail of those targets go with them (ON DELETE CASCADE).
    await delete_targets(
        session=session, ids=[int(i) for i in mailboxes.scalars() if i is not None]
    )
    await unlink_person(session=session, person_id=person_id)
    await people.delete_person_row(session=session, person=person)
    log.info("subscribe.deleted", extra={"person_id": person_id})
    return True
