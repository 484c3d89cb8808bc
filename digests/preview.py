"""`papertide digest preview`: one recipient's digest (or the sample's), rendered, unsent."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col, select

from bot.catalog.momentum import DigestError
from bot.config import Settings
from bot.outbox.payloads import EmailPayload
from bot.store.models import Person
from digests.build import Digest, build_digest
from digests.links import links_for
from digests.load import load_recipients, load_week
from digests.render import MailIdentity, render_digest
from digests.sample import sample_recipient, sample_week


async def preview_digest(
    *, session: AsyncSession, settings: Settings, email: str, week: str
) -> EmailPayload:
    """The digest `email` would get for `week`, even a quiet week they chose to skip."""
    person = (
        await session.execute(select(Person).where(col(Person.email) == email))
    ).scalar_one_or_none()
    if person is None:
        raise DigestError(f"no recipient with email {email}")
    data = await load_week(session=session, week=week, settings=settings)
    people = await load_recipients(session=session, people=[person], week=data)
    one = replace(people[0], recipient=replace(people[0].recipient, send_quiet_week=True))
    digest = build_digest(one, data, papers_per_topic=settings.digest_papers_per_topic)
    return _render(digest, settings)


def preview_sample(*, settings: Settings, week: str) -> EmailPayload:
    """The bundled sample's digest for `week`: no store needed."""
    data = sample_week(week)
    return _render(build_digest(sample_recipient(data), data, papers_per_topic=8), settings)


def _render(digest: Digest | None, settings: Settings) -> EmailPayload:
    if digest is None:
        raise DigestError("nothing to preview")
    identity = MailIdentity(settings.mail_from)
    return render_digest(digest, links=links_for(settings), identity=identity)
