"""Digest takeover from chat (issue 12, item 1), on SQLite and PostgreSQL.

Mallory's chat identity asks for Alice's confirmed address. Nothing about Alice may
change until a click in a mail sent to Alice's address; Mallory's alerts never reach
Alice's digest; Mallory's `digest off` stops nothing; chat cannot tell a known address
from an unknown one.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from bot.chat.commands import Reply, run_command
from bot.config import Settings
from bot.service.chat_deps import command_deps
from bot.store.models import OutboxRow, Person, Target
from bot.subscriptions.chat_digest import link_chat, read_link
from bot.subscriptions.optin import confirm, load_owner, request_subscription, stop_mail
from bot.subscriptions.tokens import TokenError, person_token, read_token
from bot.timeutil import utcnow
from digests.build import WeekData
from digests.load import load_recipients
from tests.support.chat import make_ctx
from tests.support.web import SECRET, seed

MALLORY = make_ctx(user="UMALLORY", channel="DMALLORY", is_dm=True)


def _settings(db_url: str) -> Settings:
    return Settings(
        database_url=db_url, secret_key=SecretStr(SECRET), public_url="https://p.example.org"
    )


async def _say(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, text: str, ctx: Any = MALLORY
) -> Reply:
    async with sessions() as session:
        reply = await run_command(session=session, ctx=ctx, text=text, deps=command_deps(settings))
        await session.commit()
    return reply


async def _alice(sessions: async_sessionmaker[AsyncSession], settings: Settings) -> Person:
    """Alice subscribed on the web and confirmed: her digest is on."""
    now = utcnow() - timedelta(hours=3)  # her own mail was hours ago
    async with sessions() as session, session.begin():
        result = await request_subscription(
            session=session, email="alice@lab.org", settings=settings, now=now,
            topic_slug="rl-for-llm-agents",
        )  # fmt: skip
        alice = await session.get(Person, result.person_id)
        assert alice is not None
        token = person_token(settings, alice, "confirm", topic_slug="rl-for-llm-agents")
        return await confirm(session=session, token=token, settings=settings, now=now)


def _snapshot(person: Person) -> tuple[Any, ...]:
    return (
        person.email, person.email_key, person.email_status, person.token_version,
        person.confirmed_at, person.digest_weekday, person.digest_hour, person.timezone,
    )  # fmt: skip


async def _digest_alerts(sessions: async_sessionmaker[AsyncSession], person_id: int) -> list[str]:
    """The alert queries the real digest loader would put in this person's digest."""
    now = utcnow()
    week = WeekData("2026-W01", now + timedelta(days=1), {}, {}, {})
    async with sessions() as session:
        person = await session.get(Person, person_id)
        assert person is not None
        [data] = await load_recipients(session=session, people=[person], week=week)
    return [a.query for a in data.alerts]


async def test_mallory_asking_for_alices_address_changes_nothing_of_alice(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    settings = _settings(db_url)
    await seed(sessions, papers=1)
    alice = await _alice(sessions, settings)
    assert alice.id is not None
    before = _snapshot(alice)
    alice_manage = person_token(settings, alice, "manage")
    assert not (await _say(sessions, settings, "alert add ti:mallory")).error

    takeover = await _say(sessions, settings, "digest alice@lab.org")
    unknown = await _say(sessions, settings, "digest nobody@lab.org", ctx=make_ctx(user="U2"))
    assert not takeover.error
    # The same words whether the address subscribes or is unknown: chat learns nothing.
    assert takeover.title.replace("alice@lab.org", "X") == unknown.title.replace(
        "nobody@lab.org", "X"
    )

    async with sessions() as session:
        alice_now = await session.get(Person, alice.id)
        mallory = (
            await session.execute(select(Target).where(col(Target.address) == "UMALLORY"))
        ).scalar_one()
        mails = (
            (await session.execute(select(OutboxRow).where(col(OutboxRow.kind) == "confirm")))
            .scalars()
            .all()
        )
    assert alice_now is not None
    assert _snapshot(alice_now) == before  # status, links, schedule: all as they were
    assert mallory.person_id is None
    # The only effect for Alice: one mail asking her to press a button (or ignore it).
    to_alice = [m for m in mails if m.payload["to"] == "alice@lab.org"]
    assert len(to_alice) == 2  # her own confirmation earlier, and this question
    assert "/link/" in to_alice[-1].payload["text"]
    assert "UMALLORY" in to_alice[-1].payload["text"]
    # Her manage link still works and her digest holds only her own things.
    async with sessions() as session:
        data = read_token(settings, alice_manage, purpose="manage")
        assert (await load_owner(session=session, data=data)).id == alice.id
    assert await _digest_alerts(sessions, alice.id) == []

    off = await _say(sessions, settings, "digest off")
    assert "no weekly digest" in off.title
    async with sessions() as session:
        alice_after = await session.get(Person, alice.id)
    assert alice_after is not None
    assert _snapshot(alice_after) == before


async def test_only_the_mailbox_owners_click_links_and_only_then_digest_off_works(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    settings = _settings(db_url)
    await seed(sessions, papers=1)
    alice = await _alice(sessions, settings)
    assert alice.id is not None
    await _say(sessions, settings, "alert add ti:agents", ctx=make_ctx(user="UALICE"))
    await _say(sessions, settings, "digest Alice@LAB.org", ctx=make_ctx(user="UALICE"))
    async with sessions() as session:
        mail = (
            await session.execute(
                select(OutboxRow).where(col(OutboxRow.key).contains(":confirm:link-"))
            )
        ).scalar_one()
    assert mail.payload["to"] == "alice@lab.org"  # her address as she confirmed it
    token = mail.payload["text"].split("/link/")[1].split()[0]
    async with sessions() as session:  # reading the link (the GET page) changes nothing
        await read_link(session=session, settings=settings, token=token, now=utcnow())
    assert await _digest_alerts(sessions, alice.id) == []
    async with sessions() as session, session.begin():
        await link_chat(session=session, settings=settings, token=token, now=utcnow())
    assert await _digest_alerts(sessions, alice.id) == ["ti:agents"]

    off = await _say(sessions, settings, "digest off", ctx=make_ctx(user="UALICE"))
    assert off.title == "Weekly digest stopped."
    async with sessions() as session:
        stopped = await session.get(Person, alice.id)
    assert stopped is not None
    assert stopped.email_status == "unsubscribed"


async def test_a_link_mail_from_before_an_unsubscribe_no_longer_links(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    settings = _settings(db_url)
    await seed(sessions, papers=1)
    alice = await _alice(sessions, settings)
    await _say(sessions, settings, "digest alice@lab.org", ctx=make_ctx(user="UALICE"))
    async with sessions() as session:
        mail = (
            await session.execute(
                select(OutboxRow).where(col(OutboxRow.key).contains(":confirm:link-"))
            )
        ).scalar_one()
    token = mail.payload["text"].split("/link/")[1].split()[0]
    async with sessions() as session, session.begin():
        person = await session.get(Person, alice.id)
        assert person is not None
        await stop_mail(session=session, person=person, now=utcnow())
    async with sessions() as session:
        with pytest.raises(TokenError) as info:
            await link_chat(session=session, settings=settings, token=token, now=utcnow())
    assert info.value.reason == "revoked"
