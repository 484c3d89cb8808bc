"""Thin loader: the store -> the builder's plain data. Batched, never per paper.

`load_week` runs once per ISO week (momentum + the week's papers of every topic);
`load_recipients` loads a batch of people in four queries (people, follows, alerts,
alert matches), so memory stays flat however many recipients there are.

An alert added during a week covers that week's earlier papers in its recap: papers
stored before it existed were never matched against it (ingest matches what arrives),
so they are matched here, in memory, against the week's papers. Nothing is recorded and
nothing is sent: the past is shown in the digest, never alerted.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.emerging_store import compute_emerging, read_emerging
from bot.catalog.momentum import digest_as_of
from bot.catalog.stats import load_momentum_and_universe
from bot.config import Settings
from bot.errors import QueryError
from bot.matching.engine import MatchEngine
from bot.store.models import (
    Alert,
    AlertMatch,
    Paper,
    PaperTopic,
    Person,
    Subscription,
    Target,
    Topic,
)
from bot.store.records import PAPER, paper_url, record_from_row
from bot.types import MatchKind
from digests.build import AlertInfo, DigestPaper, Recipient, RecipientData, TopicInfo, WeekData


def to_digest_paper(paper: Paper, topic_count: int = 1) -> DigestPaper:
    """A stored paper as the digest shows it."""
    return DigestPaper(
        id=paper.id,
        title=paper.title,
        authors=tuple(str(a.get("name", "")) for a in paper.authors),
        url=paper_url(paper.id, paper.links),
        published=paper.published,
        primary_category=paper.primary_category,
        topic_count=topic_count,
    )


def _digest_paper_from_row(row: Mapping[Any, Any]) -> DigestPaper:
    """A stored paper from its Core row mapping (`select(PAPER)`), as the digest shows it."""
    return DigestPaper(
        id=row["id"],
        title=row["title"],
        authors=tuple(str(a.get("name", "")) for a in row["authors"]),
        url=paper_url(row["id"], row["links"] or {}),
        published=row["published"],
        primary_category=row["primary_category"],
    )


async def load_week(*, session: AsyncSession, week: str, settings: Settings) -> WeekData:
    """Momentum as of the week's end, every active topic's papers published that week,
    and the week's emerging phrases."""
    as_of = digest_as_of(week)
    start = as_of - timedelta(days=7)
    momentum, universe = await load_momentum_and_universe(
        session=session, as_of=as_of, settings=settings
    )
    topics = {
        t.slug: TopicInfo(t.slug, t.name)
        for t in (await session.execute(select(Topic).where(col(Topic.active).is_(True)))).scalars()
    }
    in_week = (col(Paper.published) >= start, col(Paper.published) < as_of)
    counts = (
        select(col(PaperTopic.paper_id), func.count().label("n"))
        .join(Paper, col(Paper.id) == col(PaperTopic.paper_id))
        .where(*in_week)
        .group_by(col(PaperTopic.paper_id))
        .subquery()
    )
    papers: dict[str, DigestPaper] = {}
    for paper, n in await session.execute(
        select(Paper, counts.c.n).join(counts, counts.c.paper_id == col(Paper.id))
    ):
        papers[paper.id] = to_digest_paper(paper, int(n))
    by_topic: dict[str, list[str]] = defaultdict(list)
    rows = await session.execute(
        select(col(Topic.slug), col(PaperTopic.paper_id))
        .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
        .join(Paper, col(Paper.id) == col(PaperTopic.paper_id))
        .where(col(Topic.active).is_(True), *in_week)
    )
    for slug, paper_id in rows:
        by_topic[slug].append(paper_id)
    # The leader stores each week's final phrases at its first poll after the week; a
    # store without them (no poll since) computes them here, read-only.
    emerging = await read_emerging(session=session, week=week)
    if emerging is None or not emerging.complete:
        emerging = await compute_emerging(session=session, week=week, now=as_of, settings=settings)
    return WeekData(
        week, as_of, topics, momentum, dict(by_topic), papers, universe, emerging.phrases
    )


async def load_recipients(
    *, session: AsyncSession, people: Sequence[Person], week: WeekData
) -> list[RecipientData]:
    """Follows and alerts of `people`: every target they own, chat and email alike."""
    ids = [p.id for p in people if p.id is not None]
    follows: dict[int, set[str]] = defaultdict(set)
    for person_id, slug in await session.execute(
        select(col(Target.person_id), col(Topic.slug))
        .join(Subscription, col(Subscription.target_id) == col(Target.id))
        .join(Topic, col(Topic.id) == col(Subscription.topic_id))
        .where(col(Target.person_id).in_(ids), col(Topic.active).is_(True))
    ):
        follows[int(person_id or 0)].add(slug)
    alerts: dict[int, list[tuple[int, str]]] = defaultdict(list)
    created: dict[int, tuple[str, datetime]] = {}
    for alert_id, person_id, query, created_at in await session.execute(
        select(col(Alert.id), col(Target.person_id), col(Alert.query), col(Alert.created_at))
        .join(Target, col(Target.id) == col(Alert.target_id))
        .where(col(Target.person_id).in_(ids), col(Alert.active).is_(True))
        .order_by(col(Alert.id))
    ):
        alerts[int(person_id or 0)].append((int(alert_id or 0), str(query)))
        created[int(alert_id or 0)] = (str(query), created_at)
    caught = await _alert_papers(session, [a for v in alerts.values() for a, _ in v], week)
    for alert_id, papers in (await _recap_new_alerts(session, created, week)).items():
        _add_caught(caught.setdefault(alert_id, []), papers)
    result = []
    for person in people:
        if person.id is None or not person.email:
            continue
        recipient = Recipient(person.id, person.email, person.send_quiet_week, person.token_version)
        infos = tuple(AlertInfo(a, q, tuple(caught.get(a, ()))) for a, q in alerts[person.id])
        result.append(RecipientData(recipient, frozenset(follows[person.id]), infos))
    return result


async def _alert_papers(
    session: AsyncSession, alert_ids: list[int], week: WeekData
) -> dict[int, list[DigestPaper]]:
    # "Of the week": matched during the week, or a paper first submitted that week.
    if not alert_ids:
        return {}
    start = week.as_of - timedelta(days=7)
    stmt: Any = (
        select(col(AlertMatch.alert_id), Paper)
        .join(Paper, col(Paper.id) == col(AlertMatch.paper_id))
        .where(
            col(AlertMatch.alert_id).in_(alert_ids),
            or_(
                (col(AlertMatch.matched_at) >= start) & (col(AlertMatch.matched_at) < week.as_of),
                (col(Paper.published) >= start) & (col(Paper.published) < week.as_of),
            ),
        )
        .order_by(col(Paper.published).desc(), col(Paper.id))
    )
    caught: dict[int, list[DigestPaper]] = defaultdict(list)
    for alert_id, paper in await session.execute(stmt):
        known = week.papers.get(paper.id)
        caught[int(alert_id)].append(known or to_digest_paper(paper))
    return caught


def _add_caught(caught: list[DigestPaper], more: list[DigestPaper]) -> None:
    """Merge `more` into `caught` once each, newest first (the order of `_alert_papers`)."""
    seen = {p.id for p in caught}
    caught += [p for p in more if p.id not in seen]
    caught.sort(key=lambda p: p.id)
    caught.sort(key=lambda p: p.published, reverse=True)


RECAP_CHUNK = 1000  # papers read and matched at a time


async def _recap_new_alerts(
    session: AsyncSession, alerts: Mapping[int, tuple[str, datetime]], week: WeekData
) -> dict[int, list[DigestPaper]]:
    """The week's papers stored before an alert added during the week, that it matches.

    Pure matching on the week's papers (published or stored during the week), read in
    chunks; nothing is written, so no instant alert is ever sent for them.
    """
    start = week.as_of - timedelta(days=7)
    engine = MatchEngine()
    since: dict[int, datetime] = {}
    for alert_id, (query, created_at) in alerts.items():
        if not start <= created_at < week.as_of:
            continue  # older alerts matched these papers as they arrived
        try:
            engine.add_alert(alert_id, query)
        except QueryError:
            continue  # a query that no longer parses catches nothing, as at ingest
        since[alert_id] = created_at
    if not since:
        return {}
    in_week = or_(
        and_(PAPER.c.published >= start, PAPER.c.published < week.as_of),
        and_(PAPER.c.ingested_at >= start, PAPER.c.ingested_at < week.as_of),
    )
    stmt = select(PAPER).where(in_week, PAPER.c.ingested_at < max(since.values()))
    found: dict[int, list[DigestPaper]] = defaultdict(list)
    last = ""
    while True:
        chunk = stmt.where(PAPER.c.id > last).order_by(PAPER.c.id).limit(RECAP_CHUNK)
        rows = (await session.execute(chunk)).mappings().all()
        for row in rows:
            for match in engine.match(record_from_row(row)):
                if match.kind is MatchKind.ALERT and row["ingested_at"] < since[match.ref_id]:
                    known = week.papers.get(row["id"])
                    found[match.ref_id].append(known or _digest_paper_from_row(row))
        if len(rows) < RECAP_CHUNK:
            return found
        last = rows[-1]["id"]
