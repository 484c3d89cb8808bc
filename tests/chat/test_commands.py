"""The platform-neutral command layer: every command with good and bad input, on both stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.chat.commands import run_command
from bot.store.models import Alert, Person, Subscription, Target
from tests.conftest import count_rows
from tests.support.chat import add_topics, make_ctx, make_deps

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)

# (text, context overrides, error expected, substring of the reply title)
CASES: list[tuple[str, dict[str, Any], bool, str]] = [
    ("help", {}, False, "papertide commands"),
    ("", {}, False, "papertide commands"),
    ("frobnicate", {}, True, "Unknown command `frobnicate`"),
    ("follow rl-for-llm-agents", {}, False, "This channel now follows RL for LLM Agents"),
    ("follow RL for LLM agents", {}, False, "already follows"),
    ("follow rl-for-llm-agnts", {}, True, "Did you mean `rl-for-llm-agents`"),
    ("follow nothing-like-it-zzzz", {}, True, "topics` to browse"),
    ("follow", {}, True, "Name a topic"),
    ("follow diffusion-models", {"can_manage_channel": False}, True, "manage this channel"),
    ("follow diffusion-models me", {"can_manage_channel": False}, False, "You now follow"),
    ("follow graph-neural-networks", {"is_dm": True}, False, "You now follow"),
    ("unfollow graph-neural-networks me", {}, False, "You no longer follow"),
    ("unfollow graph-neural-networks me", {}, True, "did not follow"),
    ("topics", {}, False, "3 topics"),
    ("topics diffusion", {}, False, "1 topics"),
    ("topics zzzz", {}, True, "No topic matches"),
    ('alert add au:"Yi Wu"', {}, False, "Alert #1 added"),
    ('alert add au:"Yi Wu', {}, True, "does not parse"),
    ("alert add", {}, True, "Add a query"),
    ("alert test abs:agent", {}, False, "7 papers in the last four weeks"),
    ("alert test (abs:agent", {}, True, "does not parse"),
    ("alert remove x", {}, True, "alert's number"),
    ("alert remove 999", {}, True, "no alert #999"),
    ("alert mute 1 2d", {}, False, "muted for 2 days"),
    ("alert frob", {}, True, "alert add <query>"),
    ("alerts", {}, False, "Your alerts"),
    ("mute rl-for-llm-agents 3d", {}, False, "muted for 3 days"),
    ("mute rl-for-llm-agents forever", {}, True, "not a duration"),
    ("mute rl-for-llm-agents 0h", {}, True, "between `1m` and `52w`"),
    ("mute graph-neural-networks 1w", {}, True, "does not follow"),
    ("mute rl-for-llm-agents", {}, True, "mute <topic> <duration>"),
    ("quiet-hours 22-07 Europe/Berlin", {}, False, "22:00–07:00 (Europe/Berlin)"),
    ("quiet-hours 25-07", {}, True, "from 0 to 23"),
    ("quiet-hours 22-07 Mars/Olympus", {}, True, "Unknown time zone"),
    ("quiet-hours late", {}, True, "22-07"),
    ("quiet-hours off", {}, False, "Quiet hours off"),
    ("digest ann@example.org", {}, False, "ann@example.org"),
    ("digest not-an-email", {}, True, "digest you@example.org"),
    ("digest ann@example.org\r\nBcc: x@evil.example", {}, True, "digest you@example.org"),
    ("digest off", {}, False, "no weekly digest"),  # asking linked nothing
    ("list", {}, False, "Follows and alerts"),
    ("follow " + "x" * 10_000, {}, True, "too long"),
    ("follow rl\x00-for-llm-agents", {}, True, "control characters"),
    ("alert add ti:\u202eevil", {}, True, "control characters"),
]


async def test_every_command_good_and_bad(sessions: async_sessionmaker[AsyncSession]) -> None:
    await add_topics(sessions)
    deps = make_deps(now=lambda: NOW)
    for text, overrides, is_error, expected in CASES:
        async with sessions() as session:
            reply = await run_command(
                session=session, ctx=make_ctx(**overrides), text=text, deps=deps
            )
            await session.commit()
        assert reply.error is is_error, (text, reply)
        assert expected in reply.title, (text, reply)
        assert "\n" not in reply.title, text  # every error is one line
    async with sessions() as session:
        targets = {t.address: t for t in (await session.execute(select(Target))).scalars()}
        subs = (await session.execute(select(Subscription))).scalars().all()
        people = (await session.execute(select(Person))).scalars().all()
        alert = (await session.execute(select(Alert))).scalar_one()
    assert set(targets) == {"C1", "U1"}
    assert all(t.workspace == "T1" for t in targets.values())
    muted = [s for s in subs if s.target_id == targets["C1"].id]
    assert muted[0].muted_until == NOW + timedelta(days=3)
    assert alert.query == 'au:"Yi Wu"'
    assert alert.muted_until == NOW + timedelta(days=2)
    assert people == []  # the stand-in mails nothing; the real hook is in tests/subscriptions
    assert targets["U1"].person_id is None
    assert "quiet_hours" not in targets["C1"].settings
    assert targets["C1"].settings["timezone"] == "Europe/Berlin"


async def test_list_and_topics_show_follows_and_momentum(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    deps = make_deps()
    async with sessions() as session:
        for text in (
            "follow diffusion-models",
            "follow rl-for-llm-agents me",
            "alert add ti:agent",
        ):
            await run_command(session=session, ctx=make_ctx(), text=text, deps=deps)
        listing = await run_command(session=session, ctx=make_ctx(), text="list", deps=deps)
        topics = await run_command(session=session, ctx=make_ctx(), text="topics rl", deps=deps)
    assert listing.lines[0] == "This channel follows: Diffusion Models (`diffusion-models`)"
    assert listing.lines[1] == "You follow: RL for LLM Agents (`rl-for-llm-agents`)"
    assert listing.lines[2] == "#1 `ti:agent`"
    assert topics.lines == (
        "RL for LLM Agents (`rl-for-llm-agents`): 70 papers in the last four weeks, up 141%",
    )


async def test_other_tenants_ids_change_nothing(sessions: async_sessionmaker[AsyncSession]) -> None:
    await add_topics(sessions)
    deps = make_deps()
    theirs = make_ctx(workspace="T2", channel="C9", user="U9")
    async with sessions() as session:
        await run_command(session=session, ctx=theirs, text="alert add ti:secret", deps=deps)
        await run_command(session=session, ctx=theirs, text="follow diffusion-models", deps=deps)
        await session.commit()
    # Same channel and user ids, but in workspace T1: nothing of T2 is visible or changeable.
    ours = make_ctx(channel="C9", user="U9")
    async with sessions() as session:
        listed = await run_command(session=session, ctx=ours, text="list", deps=deps)
        removed = await run_command(session=session, ctx=ours, text="alert remove 1", deps=deps)
        muted = await run_command(session=session, ctx=ours, text="alert mute 1 1w", deps=deps)
        unfollowed = await run_command(
            session=session, ctx=ours, text="unfollow diffusion-models", deps=deps
        )
        await session.commit()
    assert "nothing yet" in listed.lines[0]
    assert listed.lines[2].startswith("No alerts")
    assert removed.error
    assert "no alert #1" in removed.title
    assert muted.error
    assert unfollowed.error
    async with sessions() as session:
        alert = (await session.execute(select(Alert))).scalar_one()
    assert alert.active
    assert alert.muted_until is None
    assert await count_rows(sessions, "subscription") == 1


async def test_everyone_may_change_channels_when_configured(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    ctx = make_ctx(can_manage_channel=False)
    async with sessions() as session:
        reply = await run_command(
            session=session,
            ctx=ctx,
            text="follow diffusion-models",
            deps=make_deps(channel_changes="everyone"),
        )
        await session.commit()
    assert not reply.error
    assert await count_rows(sessions, "subscription") == 1


async def test_channel_check_refuses_before_anything_is_stored(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)

    async def not_member(_ctx: object) -> str | None:
        return "Invite me to this channel first: `/invite @papertide`."

    async with sessions() as session:
        reply = await run_command(
            session=session,
            ctx=make_ctx(),
            text="follow diffusion-models",
            deps=make_deps(check_channel=not_member),
        )
        await session.commit()
    assert reply.error
    assert "Invite me" in reply.title
    assert await count_rows(sessions, "subscription") == 0


@pytest.mark.parametrize("text", ["digest ann@example.org", "digest ANN@example.org"])
async def test_digest_request_calls_the_injected_hook_and_links_nothing(
    sessions: async_sessionmaker[AsyncSession], text: str
) -> None:
    seen: list[tuple[str, str]] = []

    async def hook(session: AsyncSession, target: Target, email: str) -> str:
        seen.append((target.address, email))
        return "Check your inbox."

    async with sessions() as session:
        session.add(Person(email="ann@example.org", email_status="none"))
        await session.commit()
    async with sessions() as session:
        reply = await run_command(
            session=session, ctx=make_ctx(), text=text, deps=make_deps(request_digest=hook)
        )
        await session.commit()
    assert reply.title == "Check your inbox."
    assert seen == [("U1", text.split()[1])]  # the caller's own target, the address typed
    async with sessions() as session:
        person = (await session.execute(select(Person))).scalar_one()
        user = (
            await session.execute(select(Target).where(col(Target.kind) == "user"))
        ).scalar_one()
    assert person.email_status == "none"
    assert user.person_id is None
