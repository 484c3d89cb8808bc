"""`/papers alert …` with the real query language: arXiv's reading shown with its hint,
the stored form validated before it is accepted, broken alerts reported to their owner."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import run_command
from bot.matching.query import MAX_LENGTH, MAX_TERMS, SIDE_BY_SIDE, check_query
from bot.outbox.targets import get_or_create_target
from bot.store.models import Alert
from bot.types import Platform, TargetKind
from tests.support.chat import make_ctx, make_deps

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)


async def test_words_side_by_side_are_shown_as_the_or_they_mean(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    deps = make_deps(validate_query=check_query, now=lambda: NOW)
    async with sessions() as session:
        added = await run_command(
            session=session, ctx=make_ctx(), text="alert add ti:(space time)", deps=deps
        )
        tried = await run_command(
            session=session, ctx=make_ctx(), text="alert test space and time", deps=deps
        )
        plain = await run_command(
            session=session, ctx=make_ctx(), text="alert add ti:space AND ti:time", deps=deps
        )
        await session.commit()
        stored = [a.query for a in (await session.execute(select(Alert))).scalars()]
    assert added.title == "Alert #1 added: `ti:space OR ti:time`"
    assert added.lines[0] == SIDE_BY_SIDE
    assert tried.title.endswith("match `all:space OR all:and OR all:time`")
    assert SIDE_BY_SIDE in tried.lines
    assert any("lower-case and/or/not are words" in line for line in tried.lines)
    assert not any(line.startswith("as on arXiv") for line in plain.lines)
    assert stored == ["ti:space OR ti:time", "ti:space AND ti:time"]


async def test_an_alert_whose_stored_form_is_too_long_is_refused(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    # 50 words side by side fit in 1,000 characters; written out ("all:w… OR …") they do not.
    words = [f"word{i:02d}{'x' * 12}" for i in range(MAX_TERMS)]
    typed = " ".join(words)
    assert len(typed) <= MAX_LENGTH < len(" OR ".join(f"all:{w}" for w in words))
    for deps in (make_deps(validate_query=check_query), make_deps()):  # real and stand-in
        async with sessions() as session:
            reply = await run_command(
                session=session, ctx=make_ctx(), text=f"alert add {typed}", deps=deps
            )
            await session.commit()
        assert reply.error
        assert "query too long once written out in full" in reply.title
        assert "\n" not in reply.title
    async with sessions() as session:
        assert (await session.execute(select(Alert))).first() is None


async def test_an_alert_that_no_longer_loads_is_reported_to_its_owner(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    async with sessions() as session:
        target = await get_or_create_target(
            session=session,
            platform=Platform.SLACK,
            workspace="T1",
            address="U1",
            kind=TargetKind.USER,
        )
        assert target.id is not None
        # Stored under older rules: the engine skips them (and only logs it).
        session.add(Alert(target_id=target.id, query="ti:x^2", created_at=NOW))
        session.add(Alert(target_id=target.id, query="ti:fine", created_at=NOW))
        await session.commit()
    deps = make_deps(now=lambda: NOW)
    async with sessions() as session:
        listed = await run_command(session=session, ctx=make_ctx(), text="alerts", deps=deps)
        listing = await run_command(session=session, ctx=make_ctx(), text="list", deps=deps)
    assert listed.lines[0] == (
        "#1 `ti:x^2` — not running (^ boosts and ~ fuzzy or proximity search are not "
        "supported at 4): `/papers alert remove 1` and add it again, fixed"
    )
    assert listed.lines[1] == "#2 `ti:fine`"
    assert listed.lines[0] in listing.lines
