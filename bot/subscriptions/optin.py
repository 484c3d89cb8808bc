"""Email subscriptions: double opt-in, confirm, unsubscribe, resume, leave for good.

Keyword-only functions taking an explicit `session`; they flush but never commit, so
the caller (a web handler, a chat command) owns the transaction. They orchestrate the
owners of the tables they touch: people, follows, outbox targets and the outbox.

Privacy decision: a request for an address that already receives the digest gets a
mail ("you already receive it, here is your manage link") instead of a confirmation,
and the web page reads the same in every case. Only the mailbox owner learns the
address's state; nobody can probe it from the page.

Abuse limits (bot.subscriptions.quotas): one mail per address per hour, and a number
per client IP per hour; both are counted in the store, for every process.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlmodel import col, select

from bot.catalog.lookup import TopicNotFound, find_topic
from bot.config import Settings
from bot.outbox.queue import cancel_queued_at, enqueue, message_key
from bot.outbox.targets import (
    UNSUBSCRIBED,
    delete_targets,
    disable_address,
    enable_target,
    unlink_person,
)
from bot.store.engine import Executor
from bot.store.models import Person, Target, Topic
from bot.subscriptions import people, quotas
from bot.subscriptions.addresses import normalize_address
from bot.subscriptions.follows import follow_topic
from bot.subscriptions.mails import already_mail, confirm_mail
from bot.subscriptions.tokens import TokenData, TokenError, person_token, read_token
from bot.subscriptions.urls import PublicUrls
from bot.types import EmailStatus, MessageKind, Platform

log = logging.getLogger(__name__)

RATE_WINDOW = timedelta(hours=1)
MAILS_PER_ADDRESS = 1  # per RATE_WINDOW, web and chat requests together
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
    client_ip: str | None = None,
) -> SubscribeResult:
    """Start double opt-in for `email`: at most one mail per address per hour.

    New and pending addresses get a confirmation link (carrying the topic, if any);
    confirmed addresses get their manage link instead; unsubscribed ones confirm again.
    TooManyRequests when `client_ip` asked for more mails than its hourly quota.
    """
    address = normalize_address(email)
    topic = await find_topic(session=session, text=topic_slug) if topic_slug else None
    if client_ip is not None and not await quotas.take(
        session=session,
        key=quotas.ip_quota(client_ip),
        limit=settings.confirm_mails_per_ip_per_hour,
        now=now,
        window=RATE_WINDOW,
    ):
        raise quotas.TooManyRequests(
            "Too many subscription requests from your network: try again in an hour."
        )
    person = await people.get_or_create_person(session=session, email=address, settings=settings)
    target = await people.mailbox_of(session=session, person=person)
    assert person.id is not None
    assert target.id is not None
    if topic is not None and person.email_status in _NOT_YET:
        # Harmless before confirmation: nothing is mailed to a pending address.
        await follow_topic(session=session, target=target, topic=topic)
    if not await may_mail(session=session, person=person, now=now):
        log.info("subscribe.rate_limited", extra={"person_id": person.id})
        return SubscribeResult(person.id, address, SubscribeAction.RATE_LIMITED)
    urls = PublicUrls(settings.public_url)
    topic_name = topic.name if topic is not None else None
    to = person.email or address  # the address as first confirmed, whatever case was typed
    if person.email_status == EmailStatus.CONFIRMED:
        token = person_token(settings, person, "manage")
        payload = already_mail(to=to, manage_url=urls.manage(token), topic_name=topic_name)
        action = SubscribeAction.ALREADY_SUBSCRIBED_SENT
    else:
        slug = topic.slug if topic is not None else None
        token = person_token(settings, person, "confirm", topic_slug=slug)
        payload = confirm_mail(
            to=to,
            confirm_url=urls.confirm(token),
            topic_name=topic_name,
            ttl_hours=settings.confirm_ttl_hours,
        )
        action = SubscribeAction.CONFIRMATION_SENT
    # The hour bucket in the key makes the database refuse a second mail in the same
    # clock hour, whatever happens to the quota counter.
    key = message_key(target.id, MessageKind.CONFIRM, now.strftime("%Y-%m-%dT%H"))
    inserted = await enqueue(
        session=session, target_id=target.id, kind=MessageKind.CONFIRM, key=key, payload=payload
    )
    if not inserted:
        return SubscribeResult(person.id, address, SubscribeAction.RATE_LIMITED)
    await people.mark_confirmation_sent(session=session, person=person, now=now)
    log.info("subscribe.mail_queued", extra={"person_id": person.id, "action": str(action)})
    return SubscribeResult(person.id, address, action)


async def may_mail(*, session: AsyncSession, person: Person, now: datetime) -> bool:
    """Count one mail to the person's address; False past MAILS_PER_ADDRESS an hour."""
    assert person.email_key is not None or person.email is not None
    return await quotas.take(
        session=session,
        key=quotas.address_quota(person.email_key or str(person.email).lower()),
        limit=MAILS_PER_ADDRESS,
        now=now,
        window=RATE_WINDOW,
    )


def owns(person: Person, data: TokenData) -> bool:
    """True when the token still speaks for `person` (not revoked, same address for v1)."""
    if data.version is None:
        return person.email == data.email
    return person.token_version == data.version


async def load_owner(*, session: AsyncSession, data: TokenData) -> Person:
    """The person a token names, provided the token was not revoked since (version)."""
    person = await session.get(Person, data.person_id, with_for_update=True)
    if person is None:
        raise TokenError(
            "This address is no longer on our list; subscribe again from a topic page.",
            reason="recipient",
        )
    if owns(person, data):
        return person
    if data.version is None:  # a v1 unsubscribe link: it named the address instead
        raise TokenError(
            "This link belongs to another address; use the link from your own mail.",
            reason="recipient",
        )
    raise TokenError(
        "This link was replaced by a newer one; use the link in your latest mail,"
        " or ask for a new one from any topic page.",
        reason="revoked",
    )


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
    """Mark the person unsubscribed and cancel every mail still queued for them.

    Their links are revoked too, so no confirm link from an older mail can undo this;
    the caller hands out a fresh manage link if it shows one.
    """
    await people.set_status(session=session, person=person, status=EmailStatus.UNSUBSCRIBED)
    await people.rotate_tokens(session=session, person=person)
    await _stop_deliveries(session=session, person_id=person.id, email=person.email, now=now)


async def _stop_deliveries(
    *, session: Executor, person_id: int | None, email: str | None, now: datetime
) -> None:
    """Disable the person's mailbox and cancel what is queued for it (a stop never
    creates a mailbox: both statements find it by address, or do nothing)."""
    if email is not None:
        await disable_address(
            session=session, platform=Platform.EMAIL, workspace="", address=email,
            reason=UNSUBSCRIBED, now=now, failure=False,
        )  # fmt: skip
        # "No mail from the next send on": queued rows die here, not at the worker.
        await cancel_queued_at(
            session=session, platform=Platform.EMAIL, workspace="", address=email,
            reason="unsubscribed",
        )  # fmt: skip
    log.info("subscribe.unsubscribed", extra={"person_id": person_id})


async def stop_by_link(
    *, conn: AsyncConnection, data: TokenData, now: datetime
) -> people.Stopped | None:
    """Unsubscribe the address an unsubscribe token names (`data`, from `read_token`), in
    `conn`'s transaction, on the ORM road: any link (a v1 one too), the person read and
    locked first. The person stopped, with their token version now (their old links are
    revoked), or None if they had left already. TokenError for a revoked link.

    Clicks take bot.subscriptions.one_click, which comes here only for what its one
    statement could not settle."""
    async with AsyncSession(bind=conn, expire_on_commit=False) as session:
        found = await session.get(Person, data.person_id, with_for_update=True)
        if found is None:
            return None  # left for good already: nothing to stop, and that is success
        if found.email_status == EmailStatus.UNSUBSCRIBED and not owns(found, data):
            return None  # stopped already (which revoked this link): success, and nothing more
        person = await load_owner(session=session, data=data)
        if person.email_status != EmailStatus.UNSUBSCRIBED:
            await stop_mail(session=session, person=person, now=now)
        assert person.id is not None
        return people.Stopped(id=person.id, email=person.email, token_version=person.token_version)


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


async def sign_out_everywhere(*, session: AsyncSession, person: Person) -> None:
    """Revoke every link mailed to the person so far (a leaked manage link, say)."""
    await people.rotate_tokens(session=session, person=person)
    log.info("subscribe.signed_out", extra={"person_id": person.id})


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
