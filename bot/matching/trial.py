"""The engine from the store, and `alert test`: what a query would have matched.

`load_engine` compiles every active topic and alert (a stored query that no longer
parses is logged and skipped; its owner sees why in `/papers alerts`); `test_query`
runs one query over recent papers, or over the papers its submittedDate range names.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError, QueryError
from bot.matching.engine import MatchEngine
from bot.matching.query import And, Node, Term, check_query, parse_query
from bot.store.models import Alert, Topic
from bot.store.records import PAPER, PaperJSON, paper_json, record_from_row
from bot.timeutil import as_utc, utcnow

log = logging.getLogger(__name__)


async def load_engine(*, session: AsyncSession) -> MatchEngine:
    """Compile the engine from all active topics and active alerts in the store.

    A stored query that no longer parses is logged and skipped, never fatal. The rows
    are read here; compiling them (seconds for 100,000 alerts) runs in a worker thread,
    so the event loop keeps answering chat meanwhile.
    """
    found = await session.execute(select(Topic).where(col(Topic.active).is_(True)))
    topics = [(int(t.id or 0), t.slug, t.query, list(t.categories)) for t in found.scalars()]
    rows = await session.execute(
        select(col(Alert.id), col(Alert.query)).where(col(Alert.active).is_(True))
    )
    alerts = [(int(alert_id or 0), query) for alert_id, query in rows]
    return await asyncio.to_thread(compile_engine, topics, alerts)


def compile_engine(
    topics: list[tuple[int, str, str, list[str]]], alerts: list[tuple[int, str]]
) -> MatchEngine:
    """The engine of (id, slug, query, categories) topics and (id, query) alerts."""
    engine = MatchEngine()
    for topic_id, slug, query, categories in topics:
        try:
            engine.add_topic(topic_id, query, categories)
        except QueryError as exc:
            log.warning("matching.bad_topic", extra={"topic": slug, "error": str(exc)})
    for alert_id, query in alerts:
        try:
            engine.add_alert(alert_id, query)
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
    """What a query would have matched: `count` of the `scanned` papers submitted in
    [since, until] (until None: up to now), the newest `hits`, and hints on its reading."""

    query: str  # canonical form
    weeks: int
    since: datetime
    count: int
    scanned: int
    hits: list[TrialHit] = field(default_factory=list)
    until: datetime | None = None
    hints: tuple[str, ...] = ()


async def test_query(
    *,
    session: AsyncSession,
    expr: str,
    weeks: int = 4,  # noqa: PT028 (not a pytest test: the name is the command's)
    now: datetime | None = None,  # noqa: PT028
    limit: int = 5,  # noqa: PT028
    since: datetime | None = None,  # noqa: PT028
    dated: bool = False,  # noqa: PT028
) -> QueryTrial:
    """Try a query on the store's papers submitted in the last `weeks` weeks, or since
    `since`, or (with `dated`) in the range of the query's own `submittedDate:[A TO B]`.

    Raises QueryError for a malformed query. Papers stream newest first, so the first
    `limit` hits are the most recent ones; `count` covers the whole window.
    """
    if not 1 <= weeks <= 52:
        raise PapertideError(f"weeks must be between 1 and 52, not {weeks}")
    checked = check_query(expr)
    engine = MatchEngine()
    engine.add_alert(0, checked.node)
    window = submitted_window(checked.node) if dated and since is None else None
    start, until = window or (as_utc(since or (now or utcnow()) - timedelta(weeks=weeks)), None)
    stmt = select(PAPER).where(PAPER.c.published >= start)
    if until is not None:
        stmt = stmt.where(PAPER.c.published <= until)
    stmt = stmt.order_by(PAPER.c.published.desc(), PAPER.c.id).execution_options(yield_per=500)
    count = scanned = 0
    hits: list[TrialHit] = []
    async for row in (await session.stream(stmt)).mappings():
        scanned += 1
        found = engine.match(record_from_row(row))
        if found:
            count += 1
            if len(hits) < limit:
                hits.append(TrialHit(paper_json(row), found[0].terms))
    return QueryTrial(checked.text, weeks, start, count, scanned, hits, until, checked.hints)


def submitted_window(node: Node) -> tuple[datetime, datetime] | None:
    """The dates every match must be submitted in, from the submittedDate ranges the
    query requires at its top level (None when it requires none)."""
    parts = node.include if isinstance(node, And) else (node,)
    ranges = [p.value for p in parts if isinstance(p, Term) and p.field == "submittedDate"]
    if not ranges:
        return None
    firsts, lasts = zip(*(r.split(" TO ") for r in ranges), strict=True)
    start = datetime.strptime(max(firsts), "%Y%m%d%H%M").replace(tzinfo=UTC)
    end = datetime.strptime(min(lasts), "%Y%m%d%H%M").replace(tzinfo=UTC)
    return start, end + timedelta(seconds=59)  # the last minute is inside the range


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
