"""File stored papers under topics that are new or whose query or categories changed.

Matching normally runs once per paper, at ingest; a topic added to the catalog later
would otherwise start empty (no papers, no momentum) until new papers arrive. Filing
is history, not news: it writes `paper_topic` rows and never enqueues alerts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.matching.engine import MatchEngine, record_from_paper
from bot.store.dialect import dialect_insert
from bot.store.models import Paper, PaperTopic, Topic
from bot.timeutil import utcnow
from bot.types import MatchKind

log = logging.getLogger(__name__)

PAGE = 1000


async def refile_topics(*, session: AsyncSession, slugs: Sequence[str]) -> int:
    """Recompute the papers of these topics over the whole store; returns links written."""
    if not slugs:
        return 0
    topics = list(
        (await session.execute(select(Topic).where(col(Topic.slug).in_(list(slugs))))).scalars()
    )
    engine = MatchEngine()
    ids = [t.id for t in topics if t.id is not None and t.active]
    for topic in topics:
        if topic.id in ids:
            engine.add_topic(topic.id, topic.query, topic.categories)
    await session.execute(delete(PaperTopic).where(col(PaperTopic.topic_id).in_(ids)))
    written, after = 0, ""
    while True:  # keyset pages: memory stays flat however large the store
        page = list(
            (
                await session.execute(
                    select(Paper).where(col(Paper.id) > after).order_by(col(Paper.id)).limit(PAGE)
                )
            ).scalars()
        )
        if not page:
            break
        after = page[-1].id
        now = utcnow()
        rows = [
            {
                "paper_id": m.paper_id,
                "topic_id": m.ref_id,
                "terms": list(m.terms),
                "matched_at": now,
            }
            for paper in page
            for m in engine.match(record_from_paper(paper))
            if m.kind is MatchKind.TOPIC
        ]
        if rows:
            await session.execute(dialect_insert(session, PaperTopic).values(rows))
            written += len(rows)
        session.expunge_all()
    log.info("topics.refiled", extra={"topics": len(ids), "links": written})
    return written
