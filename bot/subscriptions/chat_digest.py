"""`/papers digest <email>` and `digest off`: a chat identity and a mailbox, linked only
by a click in a mail sent to that mailbox.

A chat user asks; papertide mails the address a "link" token naming the chat target;
the mailbox owner opens the page and presses its button (GET only shows it, so mail
scanners fetching every link change nothing). Until then nothing about the person
behind the address changes: not their status, not their digest, not their links. The
chat reply is the same whether the address is known, new or already asked for this
hour, so chat cannot probe who subscribes. Once linked, the chat user's follows and
alerts appear in that person's digest, and `digest off` from chat may stop it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.outbox.queue import enqueue, message_key
from bot.outbox.targets import enable_target, link_person
from bot.store.models import Person, Target
from bot.subscriptions import people, quotas
from bot.subscriptions.addresses import normalize_address
from bot.subscriptions.mails import link_mail
from bot.subscriptions.optin import load_owner, may_mail, stop_mail
from bot.subscriptions.tokens import TokenError, person_token, read_token
from bot.subscriptions.urls import PublicUrls
from bot.timeutil import utcnow
from bot.types import EmailStatus, MessageKind, Platform

log = logging.getLogger(__name__)

# (session, the chat user's own target, address as typed) -> the reply to show;
# raises a PapertideError for a refused address or an exhausted quota.
RequestDigest = Callable[[AsyncSession, Target, str], Awaitable[str]]

LINK_REPLY = (
    "If {email} is your address, a mail is on its way: the button on the page it links to"
    " connects this chat account to that address and starts your weekly digest. We mail an"
    " address at most once an hour; check its spam folder too."
)


def describe_chat(target: Target) -> str:
    """How the mail and the page name the chat account, e.g. "the Slack user U1 (T1)"."""
    platform = {"slack": "Slack", "discord": "Discord"}.get(target.platform, target.platform)
    where = f" in workspace {target.workspace}" if target.workspace else ""
    return f"the {platform} user {target.address}{where}"


def chat_digest_hook(settings: Settings) -> RequestDigest:
    """The chat command `digest <email>`: a link mail to the address, nothing else."""

    async def hook(session: AsyncSession, target: Target, email: str) -> str:
        return await request_link(
            session=session, settings=settings, target=target, email=email, now=utcnow()
        )

    return hook


async def request_link(
    *, session: AsyncSession, settings: Settings, target: Target, email: str, now: datetime
) -> str:
    """Mail `email` a link that would connect the chat `target` to it; the reply text.

    The person behind a new address is created (status "none": known, never mailed a
    digest); an existing person is only read. At most one mail per address per hour
    (shared with the web form) and `confirm_mails_per_chat_user_per_hour` per chat user.
    """
    address = normalize_address(email)
    assert target.id is not None
    if not await quotas.take(
        session=session,
        key=quotas.chat_user_quota(target.platform, target.workspace, target.address),
        limit=settings.confirm_mails_per_chat_user_per_hour,
        now=now,
    ):
        raise quotas.TooManyRequests(
            "You asked for several digest mails in the last hour: try again in an hour."
        )
    person = await people.get_or_create_person(
        session=session, email=address, settings=settings, status=EmailStatus.NONE
    )
    if await may_mail(session=session, person=person, now=now):
        mailbox = await people.mailbox_of(session=session, person=person)
        assert mailbox.id is not None
        assert person.email is not None
        token = person_token(settings, person, "link", chat_target_id=target.id)
        payload = link_mail(
            to=person.email,
            link_url=PublicUrls(settings.public_url).link(token),
            who=describe_chat(target),
            ttl_hours=settings.confirm_ttl_hours,
        )
        key = message_key(mailbox.id, MessageKind.CONFIRM, "link-" + now.strftime("%Y-%m-%dT%H"))
        await enqueue(
            session=session, target_id=mailbox.id, kind=MessageKind.CONFIRM, key=key,
            payload=payload,
        )  # fmt: skip
        log.info("digest.link_mailed", extra={"person_id": person.id, "target_id": target.id})
    return LINK_REPLY.format(email=address)


async def read_link(
    *, session: AsyncSession, settings: Settings, token: str, now: datetime
) -> tuple[Person, Target]:
    """The person and the chat target a link token names, still valid; TokenError if not."""
    data = read_token(settings, token, purpose="link", now=now)
    person = await load_owner(session=session, data=data)
    chat = await session.get(Target, data.chat_target_id) if data.chat_target_id else None
    if chat is None or chat.platform == Platform.EMAIL:
        raise TokenError(
            "The chat account this link was for is gone; ask again from chat.",
            reason="recipient",
        )
    return person, chat


async def link_chat(
    *, session: AsyncSession, settings: Settings, token: str, now: datetime
) -> tuple[Person, Target]:
    """The button on the link page: the mailbox owner links the chat account and the
    digest starts (a click in the mail proved the address; the chat user asked)."""
    person, chat = await read_link(session=session, settings=settings, token=token, now=now)
    await link_person(session=session, target=chat, person_id=person.id)
    if person.email_status != EmailStatus.CONFIRMED:
        await people.set_status(
            session=session, person=person, status=EmailStatus.CONFIRMED, confirmed_at=now
        )
    await enable_target(
        session=session, target=await people.mailbox_of(session=session, person=person)
    )
    log.info("digest.linked", extra={"person_id": person.id, "target_id": chat.id})
    return person, chat


async def request_digest(
    *, session: AsyncSession, target: Target, email: str, hook: RequestDigest
) -> str:
    """`digest <email>` for the user behind `target`: the reply (nothing is linked yet)."""
    return await hook(session, target, email.strip())


async def stop_digest(*, session: AsyncSession, target: Target) -> bool:
    """Stop the digest of the person this chat account proved it shares; False if none.

    Only a link made through the mailed button sets `person_id` on a chat target, so a
    chat user can stop only a digest whose mailbox owner let them in.
    """
    if target.person_id is None:
        return False
    person = await session.get(Person, target.person_id, with_for_update=True)
    if person is None or person.email_status in (EmailStatus.NONE, EmailStatus.UNSUBSCRIBED):
        return False
    await stop_mail(session=session, person=person, now=utcnow())
    return True
