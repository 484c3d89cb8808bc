"""Chat quotas (issue 12, item 4): confirmation mails per chat user and per address, and
a cap on alerts per person, each refused with a clear one-line message."""

from __future__ import annotations

from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col, select

from bot.chat.commands import CommandContext, Reply, run_command
from bot.config import Settings
from bot.service.chat_deps import command_deps
from bot.store.models import Alert, OutboxRow, Person
from tests.conftest import count_rows
from tests.support.chat import make_ctx


def _settings(db_url: str, **kw: object) -> Settings:
    return Settings(database_url=db_url, secret_key=SecretStr("k" * 32), **kw)  # type: ignore[arg-type]


async def _say(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, text: str,
    ctx: CommandContext | None = None,
) -> Reply:  # fmt: skip
    async with sessions() as session:
        reply = await run_command(
            session=session, ctx=ctx or make_ctx(), text=text, deps=command_deps(settings)
        )
        await session.commit()
    return reply


async def test_one_chat_user_may_ask_for_only_so_many_mails(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    settings = _settings(db_url, confirm_mails_per_chat_user_per_hour=2)
    for i in range(2):
        assert not (await _say(sessions, settings, f"digest a{i}@x.org")).error
    refused = await _say(sessions, settings, "digest a9@x.org")
    assert refused.error
    assert "try again in an hour" in refused.title
    assert "\n" not in refused.title
    assert await count_rows(sessions, "outbox") == 2
    other = await _say(sessions, settings, "digest a9@x.org", ctx=make_ctx(user="U2"))
    assert not other.error  # the limit is per chat user


async def test_an_address_in_any_case_is_one_person_and_one_mail_an_hour(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    settings = _settings(db_url)
    for user, typed in (("U1", "Ann@X.org"), ("U2", "ann@x.org"), ("U3", "ANN@X.ORG")):
        reply = await _say(sessions, settings, f"digest {typed}", ctx=make_ctx(user=user))
        assert not reply.error
    async with sessions() as session:
        people = (await session.execute(select(Person))).scalars().all()
        mails = (await session.execute(select(OutboxRow))).scalars().all()
    assert [(p.email, p.email_key) for p in people] == [("Ann@x.org", "ann@x.org")]
    assert [m.payload["to"] for m in mails] == ["Ann@x.org"]


async def test_alerts_per_person_are_capped_with_a_clear_message(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    settings = _settings(db_url, max_alerts_per_person=3)
    for i in range(3):
        assert not (await _say(sessions, settings, f"alert add ti:topic{i}")).error
    refused = await _say(sessions, settings, "alert add ti:one-too-many")
    assert refused.error
    assert "You have 3 alerts, the most papertide keeps for one person" in refused.title
    assert "alert remove" in refused.title
    assert await count_rows(sessions, "alert") == 3
    async with sessions() as session:
        first = (await session.execute(select(Alert).order_by(col(Alert.id)))).scalars().first()
    assert first is not None
    assert not (await _say(sessions, settings, f"alert remove {first.id}")).error
    assert not (await _say(sessions, settings, "alert add ti:now-it-fits")).error
