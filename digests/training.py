"""The training job: a person's ranking model is trained when they react, not when
their digest is built. Every few minutes the leader trains and stores (`taste_model`)
the models of the people who reacted since theirs was stored, on the signals their next
digest has (the last complete week's papers, their follows and alerts), so the digest
run reads trained models and only trains someone whose follows or alerts changed since.
Like the digest job it never runs in ingest.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.momentum import last_complete_week
from bot.config import Settings
from bot.store.models import Person
from bot.subscriptions.taste import mark_considered, people_to_train
from bot.taste.cache import Models
from bot.timeutil import utcnow
from digests.load import load_recipients
from digests.schedule import BATCH, WeekCache
from digests.taste import train_tastes

log = logging.getLogger(__name__)


async def train_marked(
    *, session: AsyncSession, now: datetime, settings: Settings, models: Models | None = None
) -> int:
    """Train and store the models of everyone who reacted since theirs was stored, a
    batch of people per transaction. How many models were trained."""
    due = await people_to_train(session=session)
    if not due:
        await session.rollback()
        return 0
    week = last_complete_week(now)
    weeks = WeekCache(settings)
    trained = 0
    for i in range(0, len(due), BATCH):
        considered = due[i : i + BATCH]
        started = utcnow()  # a reaction after this makes them due again
        people = list(
            (await session.execute(select(Person).where(col(Person.id).in_(considered))))
            .scalars()
            .all()
        )
        data_week = await weeks.get(session, week)
        recipients = await load_recipients(session=session, people=people, week=data_week)
        trained += await train_tastes(
            session=session,
            recipients=recipients,
            week=data_week,
            corpus_of=lambda: weeks.corpus(session, week),
            models=models,
        )
        await mark_considered(session=session, person_ids=considered, at=started)
        await session.commit()
    log.info("taste.trained", extra={"due": len(due), "trained": trained, "week": week})
    return trained
