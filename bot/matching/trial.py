"""The engine from the store, and `alert test`: what a query would have matched.

`load_engine` compiles every active topic and alert (a stored query that no longer
parses is logged and skipped); `test_query` runs one query over recent papers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError, QueryError
from bot.matching.engine import MatchEngine
from bot.matching.query import format_query, parse_query
from bot.store.models import Alert, Topic
from bot.store.records import PAPER, PaperJSON, paper_json, record_from_row
from bot.timeutil import as_utc, utcnow

log = logging.getLogger(__name__)


async def load_engine(*, session: AsyncSession) -> MatchEngine:
    """Compile the engine from all active topics and active alerts in the store.

    A stored query that no longer parses is logged and skipped, never fatal.
    """
    engine = MatchEngine()
    topics = await session.execute(select(Topic).where(col(Topic.active).is_(True)))
    for topic in topics.scalars():
        assert topic.id is not None
        try:
            engine.add_topic(topic.id, topic.query, topic.categories)
        except QueryError as exc:
            log.warning("matching.bad_topic", extra={"topic": topic.slug, "error": str(exc)})
    alerts = await session.execute(
        select(col(Alert.id), col(Alert.query)).where(col(Alert.active).is_(True))
    )
    for alert_id, query in alerts:
        try:
            engine.add_alert(int(alert_id or 0), query)
        except QueryError as exc:
            log.warning("matching.bad_alert", extra={"alert_id": alert_id, "error": str(exc)})
    log.info("matching.loaded", extra={"queries": len(engine)})
    return engine


@dataclass(frozen=True, slots=True)
class TrialHit:
    paper: PaperJSON
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class QueryTrial:
    """What a query would have matched: `count` papers since `since`, newest `hits`."""

    query: str  # canonical form
    weeks: int
    since: datetime
    count: int
    scanned: int
    hits: list[TrialHit] = field(default_factory=list)


async def test_query(
    *,
    session: AsyncSession,
    expr: str,
    weeks: int = 4,  # noqa: PT028 (not a pytest test: the name is the command's)
    now: datetime | None = None,  # noqa: PT028
    limit: int = 5,  # noqa: PT028
) -> QueryTrial:
    """Try a query on the store's papers published in the last `weeks` weeks.

    Raises QueryError for a malformed query. Papers stream newest first, so the first
    `limit` hits are the most recent ones; `count` covers the whole window.
    """
    if not 1 <= weeks <= 52:
        raise PapertideError(f"weeks must be between 1 and 52, not {weeks}")
    node = parse_query(expr)
    engine = MatchEngine()
    engine.add_alert(0, node)
    since = as_utc(now or utcnow()) - timedelta(weeks=weeks)
    stmt = (
        select(PAPER)
        .where(PAPER.c.published >= since)
        .order_by(PAPER.c.published.desc(), PAPER.c.id)
        .execution_options(yield_per=500)
    )
    count = scanned = 0
    hits: list[TrialHit] = []
    async for row in (await session.stream(stmt)).mappings():
        scanned += 1
        found = engine.match(record_from_row(row))
        if found:
            count += 1
            if len(hits) < limit:
                hits.append(TrialHit(paper_json(row), found[0].terms))
    return QueryTrial(format_query(node), weeks, since, count, scanned, hits)


test_query.__test__ = False  # type: ignore[attr-defined]  # pytest must not collect it


async def count_matches(
    *, session: AsyncSession, exprs: list[str], weeks: int = 4, now: datetime | None = None
) -> list[int]:
    """How many papers of the last `weeks` weeks each query matches, in ONE pass over
    them (`alert test` for several proposals at once). Raises QueryError if one is bad."""
    engine = MatchEngine()
    for index, expr in enumerate(exprs):
        engine.add_alert(index, parse_query(expr))
    since = as_utc(now or utcnow()) - timedelta(weeks=weeks)
    stmt = select(PAPER).where(PAPER.c.published >= since).execution_options(yield_per=500)
    counts = [0] * len(exprs)
    async for row in (await session.stream(stmt)).mappings():
        for match in engine.match(record_from_row(row)):
            counts[match.ref_id] += 1
    return counts
