"""Ingest into the store (SQLite and PostgreSQL): normalize, dedup, matches, idempotence."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import select

from bot.ingest.persist import ingest_batch
from bot.ingest.poll import run_poll
from bot.ingest.sources.sample import load_sample
from bot.matching.engine import MatchEngine
from bot.store.models import Alert, AlertMatch, Paper, PaperTopic, Target, Topic
from bot.types import AnnounceType, Author, Match, MatchKind, PaperRecord
from tests.conftest import count_rows

WHEN = datetime(2026, 6, 28, 9, tzinfo=UTC)


def _paper(version: int = 1, **kw) -> PaperRecord:  # type: ignore[no-untyped-def]
    base = PaperRecord(
        id="2606.01234", version=version, title=f"Title v{version}", abstract="An abstract.",
        authors=(Author("Ayşe Çağatan", ("Boğaziçi University",)),), categories=("cs.LG",),
        published=WHEN, updated=WHEN + timedelta(days=version), source="arxiv",
    )  # fmt: skip
    return replace(base, **kw)


class AlertStandIn:
    """Stand-in for the matching engine (bot.matching): one alert on every paper."""

    def __init__(self, alert_id: int, topic_id: int) -> None:
        self.alert_id, self.topic_id = alert_id, topic_id

    def match(self, paper: PaperRecord) -> list[Match]:
        return [
            Match(paper.id, MatchKind.ALERT, self.alert_id, ("agent",)),
            Match(paper.id, MatchKind.TOPIC, self.topic_id, ("cs.LG",)),
        ]


async def _alert_and_topic(session: AsyncSession) -> tuple[int, int]:
    target = Target(platform="console", kind="user", address="ann")
    topic = Topic(slug="t", name="T", categories=["cs.LG"])
    session.add_all([target, topic])
    await session.flush()
    assert target.id is not None
    alert = Alert(target_id=target.id, query="abs:agent*")
    session.add(alert)
    await session.flush()
    assert alert.id is not None and topic.id is not None  # noqa: PT018
    return alert.id, topic.id


async def test_versions_crosslists_and_whitespace_collapse_into_one_paper(sessions) -> None:
    messy = _paper(
        2,
        title="  ECHO:\n  Learning   Agents ",
        abstract="Line one\n  line two.",
        categories=("cs.MA", "cs.LG"),
    )
    cross = _paper(1, categories=("cs.AI",), announce_type=AnnounceType.CROSS)
    async with sessions() as session, session.begin():
        report = await ingest_batch(
            session=session, records=[_paper(1), messy, cross], matcher=MatchEngine()
        )
    assert report.new == ["2606.01234"]
    async with sessions() as session:
        [paper] = (await session.execute(select(Paper))).scalars()
    assert (paper.version, paper.title) == (2, "ECHO: Learning Agents")
    assert paper.abstract == "Line one line two."
    assert paper.categories == ["cs.MA", "cs.LG", "cs.AI"]
    assert paper.primary_category == "cs.MA"
    assert paper.authors == [{"name": "Ayşe Çağatan", "affiliations": ["Boğaziçi University"]}]
    assert paper.published == WHEN


async def test_alert_and_topic_matches_are_inserted_once_across_polls_and_versions(
    sessions,
) -> None:
    async with sessions() as session, session.begin():
        alert_id, topic_id = await _alert_and_topic(session)
    matcher = AlertStandIn(alert_id, topic_id)
    reports = []
    for records in ([_paper(1)], [_paper(1)], [_paper(2)], [_paper(2, categories=("cs.CL",))]):
        async with sessions() as session, session.begin():
            reports.append(await ingest_batch(session=session, records=records, matcher=matcher))
    first, repeat, new_version, cross = reports
    assert {m.kind for m in first.new_matches} == {MatchKind.ALERT, MatchKind.TOPIC}
    assert repeat.new_matches == []
    assert repeat.unchanged == 1
    assert new_version.updated == ["2606.01234"]
    assert new_version.new_matches == []  # a new version never matches an alert twice
    assert cross.updated == ["2606.01234"]
    assert await count_rows(sessions, "alert_match") == 1
    assert await count_rows(sessions, "paper_topic") == 1
    async with sessions() as session:
        [row] = (await session.execute(select(AlertMatch))).scalars()
        [paper] = (await session.execute(select(Paper))).scalars()
    assert row.terms == ["agent"]
    assert paper.categories == ["cs.LG", "cs.CL"]


async def test_sample_poll_is_idempotent_and_hands_new_matches_to_the_hook(
    settings, sessions
) -> None:
    async with sessions() as session, session.begin():
        session.add(Topic(slug="rl-for-llm-agents", name="RL", categories=["cs.MA"]))
    seen: list[Match] = []

    async def hook(session: AsyncSession, matches: list[Match]) -> None:
        # Runs inside the batch's transaction: what it writes commits with the matches.
        assert session.in_transaction()
        seen.extend(matches)

    first = await run_poll(
        settings=settings, sessions=sessions, source_name="sample", on_new_matches=hook
    )
    second = await run_poll(
        settings=settings, sessions=sessions, source_name="sample", on_new_matches=hook
    )
    assert first.new == await count_rows(sessions, "paper") == 742
    assert second.new == 0
    assert second.new_matches == 0
    assert len(seen) == first.new_matches == await count_rows(sessions, "paper_topic") > 0
    async with sessions() as session:
        linked = (await session.execute(select(PaperTopic.paper_id))).scalars().all()
        cats = {p.id: p.categories for p in (await session.execute(select(Paper))).scalars()}
    assert all("cs.MA" in cats[pid] for pid in linked)


def test_sample_is_relative_realistic_and_spikes_rl_for_llm_agents() -> None:
    now = datetime(2026, 9, 30, 12, 34, tzinfo=UTC)
    records, skipped = load_sample(now)
    assert skipped == []
    assert len({r.id for r in records}) == 742
    ages = [(now - r.published).days for r in records]
    assert min(ages) >= 0
    assert max(ages) < 84
    rl = re.compile(r"reinforcement learning|\bGRPO\b|\bPPO\b", re.I)
    hits = {
        r.id: r
        for r in records
        if rl.search(r.abstract) and re.search(r"\bagent", r.abstract, re.I)
    }
    recent = sum(1 for r in hits.values() if now - r.published < timedelta(weeks=4))
    before = sum(
        1 for r in hits.values() if timedelta(weeks=4) <= now - r.published < timedelta(weeks=8)
    )
    assert (recent, before) == (70, 29)
    names = {a.name for r in records for a in r.authors}
    assert "Yi Wu" in names
    assert any("Çağatan" in n for n in names)
    assert sum(1 for r in hits.values() if "Yi Wu" in {a.name for a in r.authors}) >= 5
    assert any("$\\mu$P" in r.title for r in records)
    assert any(r.version > 1 for r in records)
    assert any(len(r.categories) > 1 for r in records)
    assert all(len(r.abstract.split()) > 100 for r in records)
    assert load_sample(now + timedelta(minutes=20))[0] == records  # stable within the hour
