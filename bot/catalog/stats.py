"""Load momentum from the store: two grouped COUNT queries for the whole catalog.

Used by the digest, `topics list --json`, chat and the web; never one query per topic.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.lookup import TopicSummary, topic_summaries
from bot.catalog.momentum import (
    CHART_WEEKS,
    Momentum,
    SpikeRule,
    TopicCounts,
    archive_of,
    chart_weeks,
    compute_momentum,
    momentum_line,
    momentum_windows,
    universe_phrase,
)
from bot.config import Settings
from bot.store.models import Paper, PaperTopic, Topic

_OUT = -1  # bucket of rows outside every window / week


def _window_bucket(prev_start: datetime, recent_start: datetime, end: datetime) -> Any:
    # 1 = recent window, 0 = previous window, -1 = neither.
    return case(
        (col(Paper.published) >= end, _OUT),
        (col(Paper.published) >= recent_start, 1),
        (col(Paper.published) >= prev_start, 0),
        else_=_OUT,
    )


def _week_bucket(weeks: list[datetime], end: datetime) -> Any:
    # Index of the chart week (0 = oldest); newest first so the first true branch wins.
    whens: list[Any] = [(col(Paper.published) >= end, _OUT)]
    whens += [(col(Paper.published) >= start, i) for i, start in reversed(list(enumerate(weeks)))]
    return case(*whens, else_=_OUT)


def _span(as_of: datetime) -> tuple[datetime, datetime, list[datetime]]:
    prev_start, _, end = momentum_windows(as_of)
    weeks = chart_weeks(as_of)
    chart_end = weeks[-1] + (weeks[1] - weeks[0])
    return min(prev_start, weeks[0]), max(end, chart_end), weeks


async def load_topic_counts(*, session: AsyncSession, as_of: datetime) -> dict[str, TopicCounts]:
    """Window and weekly counts of every active topic, in one grouped query."""
    prev_start, recent_start, end = momentum_windows(as_of)
    low, high, weeks = _span(as_of)
    window = _window_bucket(prev_start, recent_start, end).label("w")
    week = _week_bucket(weeks, as_of).label("k")
    stmt = (
        select(col(Topic.slug), window, week, func.count())
        .select_from(PaperTopic)
        .join(Paper, col(Paper.id) == col(PaperTopic.paper_id))
        .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
        .where(
            col(Topic.active).is_(True), col(Paper.published) >= low, col(Paper.published) < high
        )
        .group_by(col(Topic.slug), window, week)
    )
    recent: dict[str, int] = defaultdict(int)
    previous: dict[str, int] = defaultdict(int)
    weekly: dict[str, list[int]] = defaultdict(lambda: [0] * CHART_WEEKS)
    for slug, w, k, n in (await session.execute(stmt)).all():
        if w == 1:
            recent[slug] += n
        elif w == 0:
            previous[slug] += n
        if k != _OUT:
            weekly[slug][k] += n
    slugs = (
        await session.execute(select(col(Topic.slug)).where(col(Topic.active).is_(True)))
    ).scalars()
    empty = (0,) * CHART_WEEKS
    return {s: TopicCounts(recent[s], previous[s], tuple(weekly.get(s, empty))) for s in slugs}


async def load_totals(*, session: AsyncSession, as_of: datetime) -> tuple[int, int, str]:
    """(all new papers in the recent window, in the previous one, universe wording)."""
    prev_start, recent_start, end = momentum_windows(as_of)
    window = _window_bucket(prev_start, recent_start, end).label("w")
    stmt = (
        select(window, col(Paper.primary_category), func.count())
        .where(col(Paper.published) >= prev_start, col(Paper.published) < end)
        .group_by(window, col(Paper.primary_category))
    )
    totals = {0: 0, 1: 0}
    archives: dict[str, int] = defaultdict(int)
    for w, category, n in (await session.execute(stmt)).all():
        if w in totals:
            totals[w] += n
        if w == 1:
            archives[archive_of(category or "")] += n
    return totals[1], totals[0], universe_phrase(archives)


async def load_momentum(
    *, session: AsyncSession, as_of: datetime, settings: Settings
) -> dict[str, Momentum]:
    """Momentum of every active topic as of `as_of`, keyed by slug (two queries)."""
    momentum, _ = await load_momentum_and_universe(session=session, as_of=as_of, settings=settings)
    return momentum


async def load_momentum_and_universe(
    *, session: AsyncSession, as_of: datetime, settings: Settings
) -> tuple[dict[str, Momentum], str]:
    """As `load_momentum`, plus the universe wording ('cs, stat and eess')."""
    counts = await load_topic_counts(session=session, as_of=as_of)
    total_recent, total_prev, universe = await load_totals(session=session, as_of=as_of)
    momentum = compute_momentum(
        counts,
        total_recent=total_recent,
        total_prev=total_prev,
        rule=SpikeRule.from_settings(settings),
    )
    return momentum, universe


async def load_topic_momentum(
    *, session: AsyncSession, slug: str, as_of: datetime, settings: Settings
) -> dict[str, Any] | None:
    """One topic's momentum JSON plus its sentence (`line`), for the web page and chat.

    The spike test is corrected across every topic, so all topics are computed; callers
    that ask often (the web page) cache the result.
    """
    momentum, universe = await load_momentum_and_universe(
        session=session, as_of=as_of, settings=settings
    )
    found = momentum.get(slug)
    if found is None:
        return None
    return {**found.to_json(), "line": momentum_line(found, universe)}


@dataclass(frozen=True, slots=True)
class TopicReport:
    """A topic, its paper count and its momentum: one row of `topics list` and the demo."""

    summary: TopicSummary
    momentum: Momentum | None
    line: str  # "70 papers in the last four weeks, up 141% …", or ""

    def to_json(self) -> dict[str, Any]:
        """The row of `topics list --json` (its field names are a contract)."""
        return {
            **asdict(self.summary),
            "momentum": self.momentum.to_json() if self.momentum else None,
            "momentum_line": self.line,
        }


async def topic_reports(
    *, session: AsyncSession, as_of: datetime, settings: Settings
) -> tuple[list[TopicReport], str]:
    """Every active topic with its momentum as of `as_of`, and the universe wording."""
    summaries = await topic_summaries(session=session)
    momentum, universe = await load_momentum_and_universe(
        session=session, as_of=as_of, settings=settings
    )
    rows = []
    for summary in summaries:
        found = momentum.get(summary.slug)
        rows.append(TopicReport(summary, found, momentum_line(found, universe) if found else ""))
    return rows, universe
