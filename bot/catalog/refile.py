"""File stored papers under topics that are new or whose query or categories changed.

Matching normally runs once per paper, at ingest; a topic added to the catalog later
would otherwise start empty (no papers, no momentum) until new papers arrive. Filing
is history, not news: it writes `paper_topic` rows (through bot.matching.matches) and
never enqueues alerts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.matching.engine import MatchEngine
from bot.matching.matches import clear_topics, record_matches
from bot.store.models import Topic
from bot.store.records import PAPER, record_from_row
from bot.timeutil import utcnow
from bot.types import MatchKind

log = logging.getLogger(__name__)

PAGE = 1000


async def refile_topics(*, session: AsyncSession, slugs: Sequence[str]) -> int:
    """Recompute the papers of these topics over the whole store; returns links written."""
    if not slugs:
        return 0
    topics = (
        await session.execute(select(Topic).where(col(Topic.slug).in_(list(slugs))))
    ).scalars()
    engine = MatchEngine()
    ids: list[int] = []
    for topic in topics:
        if topic.id is not None and topic.active:
            engine.add_topic(topic.id, topic.query, topic.categories)
            ids.append(topic.id)
    await clear_topics(session=session, topic_ids=ids)
    written, after = 0, ""
    while True:  # keyset pages: memory stays flat however large the store
        page = (
            (
                await session.execute(
                    select(PAPER).where(PAPER.c.id > after).order_by(PAPER.c.id).limit(PAGE)
                )
            )
            .mappings()
            .all()
        )
        if not page:
            break
        after = page[-1]["id"]
        found = [
            m
            for row in page
            for m in engine.match(record_from_row(row))
            if m.kind is MatchKind.TOPIC
        ]
        written += len(await record_matches(session=session, matches=found, now=utcnow()))
    log.info("topics.refiled", extra={"topics": len(ids), "links": written})
    return written
