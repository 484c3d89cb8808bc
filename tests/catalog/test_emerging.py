"""Emerging phrases: the detector on generated weeks (planted bursts found, planted decoys
and covered phrases ignored, one phrase per burst), and the stored weekly result on real
SQLite and PostgreSQL stores."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.catalog.emerging import Doc, Emerging, EmergingRule, detect_emerging
from bot.catalog.emerging_store import ensure_emerging, read_emerging, refresh_emerging
from bot.catalog.momentum import SpikeRule, digest_as_of, iso_week_of
from bot.catalog.phrases import STOP_WORDS, surface_form
from bot.config import Settings
from bot.matching.query import check_query
from tests.support.emerging_corpus import (
    BURST_WORDS,
    DECOY_WORDS,
    Planted,
    planted_corpus,
    seed_burst,
)

RULE = EmergingRule(SpikeRule(0.01, 5, 50.0), limit=100)
WEEK = "2026-W47"


@pytest.fixture(scope="module")
def planted() -> Planted:
    return planted_corpus(7, per_week=300, bursts=6, decoys=6)


def test_planted_bursts_are_found_and_decoys_are_not(planted: Planted) -> None:
    found = detect_emerging(planted.docs, rule=RULE)
    words = [e.words for e in found]
    assert set(words) == set(planted.bursts)
    assert not set(words) & set(planted.decoys)
    for item in found:
        assert set(item.papers) == set(planted.burst_papers[item.words])
        assert item.count == len(item.papers)
        assert item.weekly[-1] == item.count
        assert sum(item.weekly[:-1]) == item.previous
        assert item.p_value < RULE.spike.alpha
        check_query(item.query)  # the suggestion is a valid query


def _docs(*, burst: int, decoy_every: int = 4, per_week: int = 60) -> list[Doc]:
    """Flat weeks (a decoy in every `decoy_every`-th paper), then `burst` papers about
    test-time scaling in the last week."""
    docs = []
    for week in range(12):
        for i in range(per_week):
            decoy = "a graph neural network" if i % decoy_every == 0 else "a kernel"
            docs.append(Doc(f"{week}.{i}", week, f"Study {i % 7} of {decoy}", "Plain words."))
    for i in range(burst):
        docs.append(Doc(f"b.{i}", 11, f"Study {i % 7} of Test-Time Scaling", "Plain words."))
    return docs


def test_one_phrase_per_burst_written_as_papers_write_it() -> None:
    (item,) = detect_emerging(_docs(burst=9), rule=RULE)
    assert item.words == BURST_WORDS  # not 'test', 'test time', 'time scaling'…
    assert item.phrase == "test-time scaling"
    assert item.query == 'ti:"test-time scaling" OR abs:"test-time scaling"'
    assert item.slug == "test-time-scaling"
    assert item.line == "'test-time scaling', 9 papers this week, none in the 11 weeks before"
    assert DECOY_WORDS not in {e.words for e in detect_emerging(_docs(burst=9), rule=RULE)}


def test_below_the_minimum_count_nothing_emerges() -> None:
    assert detect_emerging(_docs(burst=4), rule=RULE) == []


def test_a_topic_holding_the_phrase_papers_covers_it_unless_it_holds_everything() -> None:
    docs = _docs(burst=9)
    burst_ids = frozenset(d.id for d in docs if d.id.startswith("b."))
    specific = {"tts": burst_ids | {"11.0"}}
    assert detect_emerging(docs, rule=RULE, topic_papers=specific) == []
    everything = {"all-cs": frozenset(d.id for d in docs if d.week == 11)}
    (item,) = detect_emerging(docs, rule=RULE, topic_papers=everything)
    assert item.words == BURST_WORDS


def test_stop_words_and_surface_forms() -> None:
    assert {"the", "of", "paper", "propose"} <= STOP_WORDS
    texts = ["We study Test-Time Scaling.", "test-time scaling again", "test time scaling"]
    assert surface_form(BURST_WORDS, texts) == "test-time scaling"
    assert surface_form(("x", "y"), ["nothing here"]) == "x y"


def test_json_round_trip() -> None:
    (item,) = detect_emerging(_docs(burst=9), rule=RULE)
    data = item.to_json()
    assert Emerging.from_json(data) == item
    assert data["add_command"].startswith("papertide topics add test-time-scaling --name")


async def test_stored_week_refreshed_and_read(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    as_of = digest_as_of(WEEK)
    burst_ids = await seed_burst(sessions, as_of)
    during = as_of - timedelta(hours=1)  # still inside the week: not final yet
    report = await refresh_emerging(sessions=sessions, now=during, settings=settings, week=WEEK)
    assert not report.complete
    (item,) = report.phrases
    assert item.words == BURST_WORDS
    assert set(item.papers) == set(burst_ids)
    async with sessions() as session:
        stored = await read_emerging(session=session, week=WEEK)
        latest = await read_emerging(session=session)
    assert stored == report
    assert latest == report
    # After the week, asking again computes it once more, final; then it is only read.
    after = as_of + timedelta(days=1)
    final = await ensure_emerging(sessions=sessions, week=WEEK, now=after, settings=settings)
    assert final.complete
    assert final.phrases == report.phrases
    again = await ensure_emerging(sessions=sessions, week=WEEK, now=after, settings=settings)
    assert again.computed_at == final.computed_at


async def test_refresh_defaults_to_the_week_of_now(
    sessions: async_sessionmaker[AsyncSession], settings: Settings
) -> None:
    now = datetime(2026, 11, 19, 12, tzinfo=UTC)
    report = await refresh_emerging(sessions=sessions, now=now, settings=settings)
    assert report.week == iso_week_of(now)
    assert report.phrases == ()
    assert report.papers == 0
