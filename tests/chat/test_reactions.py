"""`/papers more|less|unmark` and the buttons' `press`, on both stores."""

from __future__ import annotations

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.chat.commands import Reply, run_command
from bot.chat.react_cmds import press
from bot.outbox.targets import get_or_create_target
from bot.store.models import Paper, Reaction, Target
from bot.timeutil import utcnow
from bot.types import Leaning, Platform, TargetKind
from tests.conftest import count_rows
from tests.support.chat import make_ctx, make_deps

TITLE = "Scaling *RL* <for> `agents`"


async def add_paper(sessions: async_sessionmaker[AsyncSession], pid: str = "2611.01234") -> None:
    async with sessions() as session, session.begin():
        now = utcnow()
        session.add(Paper(id=pid, title=TITLE, published=now, updated=now, ingested_at=now))


async def _rows(sessions: async_sessionmaker[AsyncSession]) -> list[tuple[str, str, int, str]]:
    async with sessions() as session:
        found = await session.execute(
            select(
                col(Target.address),
                col(Reaction.paper_id),
                col(Reaction.leaning),
                col(Reaction.via),
            )
            .join(Target, col(Target.id) == col(Reaction.target_id))
            .order_by(col(Target.address))
        )
        return [(a, p, n, v) for a, p, n, v in found.all()]


async def _run(sessions: async_sessionmaker[AsyncSession], text: str, **ctx: object) -> Reply:
    async with sessions() as session:
        reply = await run_command(session=session, ctx=make_ctx(**ctx), text=text, deps=make_deps())
        await session.commit()
    return reply


@pytest.mark.parametrize(
    "ref", ["2611.01234", "arXiv:2611.01234v2", "https://arxiv.org/abs/2611.01234v3"]
)
async def test_more_accepts_every_spelling_of_an_id_and_speaks_only_for_the_user(
    sessions: async_sessionmaker[AsyncSession], ref: str
) -> None:
    await add_paper(sessions)
    reply = await _run(sessions, f"more {ref}")
    assert not reply.error
    assert reply.title == "Noted: more like 2611.01234"
    assert reply.lines[0] == "`Scaling *RL* <for> 'agents'`"
    # Typed in channel C1, yet only the user's own target learns.
    assert await _rows(sessions) == [("U1", "2611.01234", 1, "slack")]


async def test_less_replaces_more_and_unmark_undoes(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_paper(sessions)
    await _run(sessions, "more 2611.01234")
    await _run(sessions, "less 2611.01234")
    assert await _rows(sessions) == [("U1", "2611.01234", -1, "slack")]
    undone = await _run(sessions, "unmark arXiv:2611.01234")
    assert undone.title.startswith("Undone")
    assert await count_rows(sessions, "reaction") == 0
    again = await _run(sessions, "unmark 2611.01234")
    assert again.error
    assert "nothing to undo" in again.title


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("more", "more <arXiv id>"),
        ("more 2611.01234 2611.01235", "more <arXiv id>"),
        ("less not-an-id", "is not an arXiv id"),
        ("more 2611.09999", "No paper 2611.09999"),
        ("unmark 2611.09999", "No paper 2611.09999"),
    ],
)
async def test_bad_input_is_one_clear_line_and_changes_nothing(
    sessions: async_sessionmaker[AsyncSession], text: str, expected: str
) -> None:
    await add_paper(sessions)
    reply = await _run(sessions, text)
    assert reply.error
    assert expected in reply.title
    assert "\n" not in reply.title
    assert await count_rows(sessions, "reaction") == 0


async def test_a_button_in_a_followed_channel_teaches_user_and_channel(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_paper(sessions)
    async with sessions() as session, session.begin():
        await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="C1",
            kind=TargetKind.CHANNEL,
        )  # fmt: skip
    ctx = make_ctx()
    async with sessions() as session, session.begin():
        pressed = await press(session, ctx, "2611.01234", Leaning.MORE, undo=False)
    assert pressed.undo == ("2611.01234", Leaning.MORE)
    assert await _rows(sessions) == [
        ("C1", "2611.01234", 1, "slack"),
        ("U1", "2611.01234", 1, "slack"),
    ]
    # Someone else says "less" in the channel; the first user's undo leaves that word.
    async with sessions() as session, session.begin():
        await press(session, make_ctx(user="U2"), "2611.01234", Leaning.LESS, undo=False)
        await press(session, ctx, "2611.01234", Leaning.MORE, undo=True)
    assert await _rows(sessions) == [
        ("C1", "2611.01234", -1, "slack"),
        ("U2", "2611.01234", -1, "slack"),
    ]
    async with sessions() as session, session.begin():
        await press(session, make_ctx(user="U2"), "2611.01234", Leaning.LESS, undo=True)
    assert await count_rows(sessions, "reaction") == 0


async def test_a_button_in_a_dm_or_unknown_channel_teaches_only_the_user(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_paper(sessions)
    async with sessions() as session, session.begin():
        await press(session, make_ctx(channel="D9"), "2611.01234", Leaning.LESS, undo=False)
    assert await _rows(sessions) == [("U1", "2611.01234", -1, "slack")]
    assert await count_rows(sessions, "target") == 1  # no target invented for D9


@pytest.mark.parametrize("value", ["2611.09999", "x" * 500, "2611.01234\x00", ""])
async def test_a_forged_button_value_is_refused_plainly(
    sessions: async_sessionmaker[AsyncSession], value: str
) -> None:
    await add_paper(sessions)
    async with sessions() as session, session.begin():
        pressed = await press(session, make_ctx(), value, Leaning.MORE, undo=False)
    assert pressed.reply.error
    assert pressed.undo is None
    assert "nothing changed" in pressed.reply.title
    assert await count_rows(sessions, "reaction") == 0
