"""Where two copies of a rule used to disagree, chat now follows the one owner's rule."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.chat.commands import Reply, run_command
from bot.outbox.queue import enqueue, message_key
from bot.outbox.targets import get_or_create_target
from bot.store.models import OutboxRow, Person, Target
from bot.types import EmailStatus, MessageKind, OutboxStatus, Platform, TargetKind
from tests.conftest import count_rows
from tests.support.chat import add_topics, make_ctx, make_deps


async def _say(sessions: async_sessionmaker[AsyncSession], text: str) -> Reply:
    async with sessions() as session:
        reply = await run_command(session=session, ctx=make_ctx(), text=text, deps=make_deps())
        await session.commit()
    return reply


async def test_quiet_hours_with_minutes_are_taken_and_a_window_of_nothing_refused(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    ok = await _say(sessions, "quiet-hours 22:30-07:00 Europe/Berlin")
    assert not ok.error, ok
    assert "22:30–07:00 (Europe/Berlin)" in ok.title
    nothing = await _say(sessions, "quiet-hours 22-22")
    assert nothing.error
    assert "two different times" in nothing.title
    async with sessions() as session:
        channel = (await session.execute(select(Target))).scalar_one()
    assert channel.settings["quiet_hours"] == "22:30-07:00"  # the refusal changed nothing


async def test_digest_refuses_what_the_web_form_refuses(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # The chat copy of the address check took these; the web's refused them.
    for address in ("a..b@example.org", "ann@-lab.example.org", "ann@example.123"):
        reply = await _say(sessions, f"digest {address}")
        assert reply.error, address
        assert "digest you@example.org" in reply.title
    assert await count_rows(sessions, "person") == 0


async def test_digest_off_cancels_the_mail_already_queued(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session, session.begin():
        person = Person(email="ann@example.org", email_status=EmailStatus.CONFIRMED)
        session.add(person)
        await session.flush()
        assert person.id is not None
        mailbox = await get_or_create_target(
            session=session, platform=Platform.EMAIL, workspace="", address="ann@example.org",
            kind=TargetKind.EMAIL, person_id=person.id,
        )  # fmt: skip
        user = await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="U1",
            kind=TargetKind.USER, person_id=person.id,
        )  # fmt: skip
        assert mailbox.id is not None
        assert user.person_id == person.id
        await enqueue(
            session=session, target_id=mailbox.id, kind=MessageKind.DIGEST,
            key=message_key(mailbox.id, MessageKind.DIGEST, "2026-W48"), payload={"to": "x"},
        )  # fmt: skip
    reply = await _say(sessions, "digest off")
    assert reply.title == "Weekly digest stopped."
    async with sessions() as session:
        row = (
            await session.execute(select(OutboxRow).where(col(OutboxRow.kind) == "digest"))
        ).scalar_one()
        person_now = (await session.execute(select(Person))).scalar_one()
        box = (
            await session.execute(select(Target).where(col(Target.platform) == "email"))
        ).scalar_one()
    assert row.status == OutboxStatus.DEAD  # "no mail from the next send on"
    assert person_now.email_status == EmailStatus.UNSUBSCRIBED
    assert box.disabled_reason == "unsubscribed"
    assert box.failure_count == 0  # leaving is not a delivery failure
