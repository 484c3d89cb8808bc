"""`/papers digest <email>` and `digest off`: the web's double opt-in, from chat.

The chat user's target is linked to the person behind the address, so their chat
follows and alerts appear in that person's digest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.outbox.targets import link_person
from bot.store.models import Person, Target
from bot.subscriptions.optin import SubscribeAction, request_subscription, stop_mail
from bot.timeutil import utcnow
from bot.types import EmailStatus


@dataclass(frozen=True, slots=True)
class DigestRequest:
    """What a digest request did: the person it is for and the reply to show."""

    person_id: int
    reply: str


# (session, address as typed) -> DigestRequest; raises a PapertideError for a bad address.
RequestDigest = Callable[[AsyncSession, str], Awaitable[DigestRequest]]

_CHAT_REPLIES = {
    SubscribeAction.CONFIRMATION_SENT: (
        "Check {email}: one click in the mail we sent starts your digest."
    ),
    SubscribeAction.ALREADY_SUBSCRIBED_SENT: "We sent {email} a link to manage your weekly digest.",
    SubscribeAction.RATE_LIMITED: (
        "We already mailed {email} in the last hour; check that inbox (and its spam)."
    ),
}


def chat_digest_hook(settings: Settings) -> RequestDigest:
    """The chat command `digest <email>`: the same double opt-in as the web page."""

    async def hook(session: AsyncSession, email: str) -> DigestRequest:
        result = await request_subscription(
            session=session, email=email, settings=settings, now=utcnow()
        )
        reply = _CHAT_REPLIES[result.action].format(email=result.email)
        return DigestRequest(result.person_id, reply)

    return hook


async def request_digest(
    *, session: AsyncSession, target: Target, email: str, hook: RequestDigest
) -> str:
    """Start the email digest for the user behind `target` and link them to that person."""
    result = await hook(session, email.strip())
    await link_person(session=session, target=target, person_id=result.person_id)
    return result.reply


async def stop_digest(*, session: AsyncSession, target: Target) -> bool:
    """Unsubscribe the linked person from the digest; False when there was none."""
    if target.person_id is None:
        return False
    person = await session.get(Person, target.person_id, with_for_update=True)
    if person is None or person.email_status in (EmailStatus.NONE, EmailStatus.UNSUBSCRIBED):
        return False
    await stop_mail(session=session, person=person, now=utcnow())
    return True
