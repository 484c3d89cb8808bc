"""Reactions: one row per (target, paper), the latest word wins, undo and erase forget."""

from __future__ import annotations

import asyncio

import numpy as np
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.outbox.targets import get_or_create_target
from bot.store.models import Paper, Person, Target
from bot.subscriptions.marking import erase_for_person
from bot.subscriptions.reactions import (
    erase_reactions,
    person_target_ids,
    react,
    reactions_of,
    unreact,
)
from bot.subscriptions.taste import store_models
from bot.taste.features import Vocabulary
from bot.taste.model import Model
from bot.timeutil import utcnow
from bot.types import Leaning, Platform, TargetKind
from tests.conftest import count_rows


async def _setup(sessions: async_sessionmaker[AsyncSession]) -> tuple[Target, Target]:
    async with sessions() as session, session.begin():
        now = utcnow()
        for pid in ("2611.00001", "2611.00002"):
            session.add(Paper(id=pid, title=f"Paper {pid}", published=now, updated=now,
                              ingested_at=now))  # fmt: skip
        person = Person(email="ann@example.org", email_key="ann@example.org", created_at=now)
        session.add(person)
        await session.flush()
        user = await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="U1",
            kind=TargetKind.USER,
        )  # fmt: skip
        user.person_id = person.id
        channel = await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="C1",
            kind=TargetKind.CHANNEL,
        )  # fmt: skip
        return user, channel


async def test_latest_word_wins_and_undo_forgets(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    user, channel = await _setup(sessions)
    assert user.id is not None
    assert channel.id is not None
    async with sessions() as session, session.begin():
        assert await react(session=session, target_id=user.id, paper_id="2611.00001",
                           leaning=Leaning.MORE, via="slack")  # fmt: skip
        # The same word again changes nothing; the opposite replaces it.
        assert not await react(session=session, target_id=user.id, paper_id="2611.00001",
                               leaning=Leaning.MORE, via="slack")  # fmt: skip
        assert await react(session=session, target_id=user.id, paper_id="2611.00001",
                           leaning=Leaning.LESS, via="email")  # fmt: skip
        await react(session=session, target_id=channel.id, paper_id="2611.00001",
                    leaning=Leaning.MORE, via="slack")  # fmt: skip
    async with sessions() as session:
        mine = await reactions_of(session=session, target_ids=[user.id])
        assert [(r.paper_id, r.leaning, r.via) for r in mine] == [
            ("2611.00001", Leaning.LESS, "email")
        ]
    assert await count_rows(sessions, "reaction") == 2
    async with sessions() as session, session.begin():
        assert await unreact(session=session, target_id=user.id, paper_id="2611.00001")
        assert not await unreact(session=session, target_id=user.id, paper_id="2611.00001")
    async with sessions() as session:
        # The channel's reaction is its own: the user's undo leaves it.
        left = await reactions_of(session=session, target_ids=[user.id, channel.id])
        assert [(r.target_id, r.leaning) for r in left] == [(channel.id, Leaning.MORE)]


async def test_concurrent_clicks_leave_one_row_and_erase_forgets_a_person(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    user, channel = await _setup(sessions)
    assert user.id is not None
    assert channel.id is not None
    assert user.person_id is not None

    async def click(pid: str, leaning: Leaning) -> None:
        async with sessions() as session, session.begin():
            await react(session=session, target_id=user.id or 0, paper_id=pid,
                        leaning=leaning, via="discord")  # fmt: skip

    await asyncio.gather(*(click("2611.00002", Leaning.MORE) for _ in range(4)))
    await click("2611.00001", Leaning.LESS)
    assert await count_rows(sessions, "reaction") == 2
    async with sessions() as session, session.begin():
        owned = await person_target_ids(session=session, person_id=user.person_id)
        assert owned == [user.id]
        assert await erase_reactions(session=session, target_ids=owned) == 2
        assert await erase_reactions(session=session, target_ids=[]) == 0
    assert await count_rows(sessions, "reaction") == 0


async def test_erasing_a_persons_reactions_erases_their_stored_model(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    user, _channel = await _setup(sessions)
    assert user.id is not None
    assert user.person_id is not None
    vocabulary = Vocabulary()
    model = Model(np.array([vocabulary.column("graph", "graphs")], dtype=np.int32),
                  np.array([0.5], dtype=np.float32), 0.1)  # fmt: skip
    async with sessions() as session, session.begin():
        await react(session=session, target_id=user.id, paper_id="2611.00001",
                    leaning=Leaning.MORE, via="slack")  # fmt: skip
        await store_models(session=session, models=[(user.person_id, "k", model)],
                           vocabulary=vocabulary)  # fmt: skip
    assert await count_rows(sessions, "taste_model") == 1
    async with sessions() as session, session.begin():
        person = await session.get(Person, user.person_id)
        assert person is not None
        assert await erase_for_person(session=session, person=person) == 1
    assert await count_rows(sessions, "taste_model") == 0
    assert await count_rows(sessions, "reaction") == 0
