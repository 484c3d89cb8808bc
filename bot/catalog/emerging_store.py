"""Emerging phrases in the store: the `emerging_week` table's one writer, and its reads.

Detection reads 12 weeks of papers and takes seconds, so it never runs per request: the
leader refreshes the current week after each poll that stored papers (`refresh_emerging`),
and a week that has ended is computed once more, final, the first time anyone asks for
it (`ensure_emerging`: the digest, the CLI). Pages and commands read the stored result.
Read (papers, the week's topic papers) -> detect (pure, in a thread, so the event loop
keeps serving) -> write (one row per week).
"""

from __future__ import annotations

import asyncio
import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.catalog.emerging import Doc, Emerging, EmergingRule, detect_emerging
from bot.catalog.momentum import chart_weeks, digest_as_of, iso_week_of, parse_iso_week
from bot.config import Settings
from bot.store.models import EmergingWeek, Paper, PaperTopic, Topic

log = logging.getLogger(__name__)
_WEEK = timedelta(days=7)


@dataclass(frozen=True, slots=True)
class EmergingReport:
    """The stored emerging phrases of one ISO week."""

    week: str
    computed_at: datetime
    complete: bool  # computed after the week ended
    papers: int  # the week's papers when computed
    phrases: tuple[Emerging, ...]

    def to_json(self) -> dict[str, Any]:
        """The document of `topics emerging --json` (its field names are a contract)."""
        return {
            "week": self.week,
            "computed_at": self.computed_at.isoformat(),
            "complete": self.complete,
            "papers": self.papers,
            "phrases": [p.to_json() for p in self.phrases],
        }


def week_as_of(week: str, now: datetime) -> tuple[datetime, bool]:
    """The instant a week's detection is as of (its end, or `now` while it runs) and
    whether the week has ended."""
    end = digest_as_of(week)
    return (end, True) if now >= end else (now, False)


async def load_docs(
    *, session: AsyncSession, as_of: datetime
) -> tuple[list[Doc], dict[str, frozenset[str]]]:
    """The chart weeks' papers as `Doc`s (newest first), and each active topic's paper
    ids of the tested (last) week."""
    weeks = chart_weeks(as_of)
    start, last = weeks[0], weeks[-1]
    end = min(as_of, last + _WEEK)
    rows = await session.execute(
        select(
            col(Paper.id),
            col(Paper.title),
            col(Paper.abstract),
            col(Paper.published),
            col(Paper.primary_category),
        )
        .where(col(Paper.published) >= start, col(Paper.published) < end)
        .order_by(col(Paper.published).desc(), col(Paper.id))
    )
    docs = [
        Doc(paper_id, (published - start) // _WEEK, title, abstract or "", category or "")
        for paper_id, title, abstract, published, category in rows
    ]
    held: dict[str, set[str]] = defaultdict(set)
    for slug, paper_id in await session.execute(
        select(col(Topic.slug), col(PaperTopic.paper_id))
        .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
        .join(Paper, col(Paper.id) == col(PaperTopic.paper_id))
        .where(col(Topic.active).is_(True), col(Paper.published) >= last)
        .where(col(Paper.published) < end)
    ):
        held[slug].add(paper_id)
    return docs, {slug: frozenset(ids) for slug, ids in held.items()}


async def compute_emerging(
    *, session: AsyncSession, week: str, now: datetime, settings: Settings
) -> EmergingReport:
    """Detect the week's emerging phrases from the store (nothing is written)."""
    as_of, complete = week_as_of(week, now)
    docs, topic_papers = await load_docs(session=session, as_of=as_of)
    rule = EmergingRule.from_settings(settings)
    phrases = await asyncio.to_thread(detect_emerging, docs, rule=rule, topic_papers=topic_papers)
    papers = sum(1 for d in docs if d.week == len(chart_weeks(as_of)) - 1)
    return EmergingReport(week, now, complete, papers, tuple(phrases))


async def save_emerging(*, session: AsyncSession, report: EmergingReport) -> None:
    """Store a week's report, replacing the one before (the table's only write)."""
    row = await session.get(EmergingWeek, report.week)
    values: dict[str, Any] = {
        "computed_at": report.computed_at,
        "complete": report.complete,
        "papers": report.papers,
        "phrases": [p.to_json() for p in report.phrases],
    }
    if row is None:
        session.add(EmergingWeek(week=report.week, **values))
    else:
        for key, value in values.items():
            setattr(row, key, value)
    await session.flush()


async def read_emerging(*, session: AsyncSession, week: str | None = None) -> EmergingReport | None:
    """The stored report of `week`, or of the latest week stored when `week` is None."""
    query = select(EmergingWeek)
    if week is not None:
        query = query.where(col(EmergingWeek.week) == week)
    row = (await session.execute(query.order_by(col(EmergingWeek.week).desc()).limit(1))).scalar()
    if row is None:
        return None
    return EmergingReport(
        row.week,
        row.computed_at,
        row.complete,
        row.papers,
        tuple(Emerging.from_json(p) for p in row.phrases),
    )


async def ensure_emerging(
    *, sessions: async_sessionmaker[AsyncSession], week: str, now: datetime, settings: Settings
) -> EmergingReport:
    """The week's report: the stored one when it is final (or the week still runs and
    one is stored), else computed now and stored."""
    parse_iso_week(week)
    async with sessions() as session:
        stored = await read_emerging(session=session, week=week)
    _, ended = week_as_of(week, now)
    if stored is not None and (stored.complete or not ended):
        return stored
    return await refresh_emerging(sessions=sessions, week=week, now=now, settings=settings)


async def refresh_emerging(
    *,
    sessions: async_sessionmaker[AsyncSession],
    now: datetime,
    settings: Settings,
    week: str | None = None,
) -> EmergingReport:
    """Compute and store `week` (default: the week of `now`): the leader's job after polls."""
    week = week or iso_week_of(now)
    async with sessions() as session:
        report = await compute_emerging(session=session, week=week, now=now, settings=settings)
    async with sessions() as session, session.begin():
        await save_emerging(session=session, report=report)
    log.info("emerging.refreshed", extra={"week": week, "phrases": len(report.phrases)})
    return report
