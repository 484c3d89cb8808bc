"""The full-text index: backfilled by migration 0005_fulltext; ingest queues what it
stores and the indexer catches up after the commit (0010_ingest_index_queue), on SQLite
and PostgreSQL."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.index import index_lag, index_queued, index_until_current
from bot.ask.service import Asker
from bot.ingest.persist import ingest_batch
from bot.store.engine import create_engine as create_async
from bot.store.engine import driver_urls, session_factory
from bot.store.migrate import current_revision, upgrade_sync
from bot.types import Author, Match, PaperRecord
from tests.conftest import _admin_conninfo, count_rows


class NoMatches:
    def match(self, paper: PaperRecord) -> list[Match]:
        return []


async def _ingest_then_fail(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session, session.begin():
        await ingest_batch(
            session=session, records=[_record("2609.00002", "Gamma")], matcher=NoMatches()
        )
        raise RuntimeError("the batch fails after the insert")


def _record(pid: str, title: str, version: int = 1) -> PaperRecord:
    when = datetime.now(UTC) - timedelta(days=3)
    return PaperRecord(
        id=pid,
        version=version,
        title=title,
        abstract=f"An abstract about {title.lower()}.",
        authors=(Author("Zoë Çağatan", ("Université Paris-Saclay",)),),
        categories=("cs.LG",),
        published=when,
        updated=when,
        source="test",
    )


@pytest.fixture(params=["sqlite", "postgresql"])
def blank_url(request: pytest.FixtureRequest, tmp_path: object) -> Iterator[str]:
    """An empty database, not migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/blank.db"
        return
    server = request.getfixturevalue("pg_server_url")
    name = f"papertide_b_{uuid.uuid4().hex[:10]}"
    admin = _admin_conninfo(server)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_url(server).set(database=name).render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _ids(url: str, question: str) -> list[str]:
    engine = create_async(url)
    try:
        found = await Asker(sessions=session_factory(engine)).search(question, topic=None, limit=10)
        return [s.paper_id for s in found.ranked]
    finally:
        await engine.dispose()


async def test_migration_backfills_papers_stored_before_it(blank_url: str) -> None:
    upgrade_sync(blank_url, "0001")
    sync = create_engine(driver_urls(blank_url)[1])
    with sync.begin() as conn:
        for i, title in enumerate(["Hindsight credit assignment", "Sparse autoencoders"]):
            conn.execute(
                text(
                    "INSERT INTO paper (id, version, title, abstract, authors, categories, "
                    "primary_category, comment, journal_ref, links, published, updated, source, "
                    "ingested_at) VALUES (:id, 1, :title, :abstract, :authors, '[]', 'cs.LG', "
                    "'', '', '{}', :when, :when, 'old', :when)"
                ),
                {
                    "id": f"2601.0000{i}",
                    "title": title,
                    "abstract": "Written before the index existed.",
                    "authors": json.dumps([{"name": "Zoë Çağatan", "affiliations": ["ETH"]}]),
                    "when": datetime(2026, 1, 5, tzinfo=UTC).replace(tzinfo=None),
                },
            )
    sync.dispose()
    upgrade_sync(blank_url)
    assert current_revision(blank_url) is not None
    assert await _ids(blank_url, "hindsight credit") == ["2601.00000"]
    assert await _ids(blank_url, "papers by Zoe Cagatan") == ["2601.00000", "2601.00001"]


async def test_migration_0010_queues_papers_the_index_lacks(blank_url: str) -> None:
    upgrade_sync(blank_url, "0009_speed_serve")
    sync = create_engine(driver_urls(blank_url)[1])
    with sync.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO paper (id, version, title, abstract, authors, categories, "
                "primary_category, comment, journal_ref, links, published, updated, source, "
                "ingested_at) VALUES ('2601.00009', 1, 'Orphaned manifold learning', '', "
                "'[]', '[]', 'cs.LG', '', '', '{}', :when, :when, 'old', :when)"
            ),
            {"when": datetime(2026, 1, 5, tzinfo=UTC).replace(tzinfo=None)},
        )
    sync.dispose()
    upgrade_sync(blank_url)
    engine = create_async(blank_url)
    try:
        sessions = session_factory(engine)
        assert await count_rows(sessions, "paper_index_queue") == 1
        assert await index_until_current(sessions) == 1
    finally:
        await engine.dispose()
    assert await _ids(blank_url, "orphaned manifold") == ["2601.00009"]


async def _ingest(sessions: async_sessionmaker[AsyncSession], *records: PaperRecord) -> None:
    async with sessions() as session, session.begin():
        await ingest_batch(session=session, records=records, matcher=NoMatches())


async def test_ingest_queues_and_the_indexer_makes_papers_findable(db_url: str) -> None:
    engine = create_async(db_url)
    sessions = session_factory(engine)
    try:
        await _ingest(sessions, _record("2609.00001", "Alpha agents"))
        # Committed and queued, not indexed: ingest leaves the index to the indexer.
        assert await _ids(db_url, "alpha") == []
        async with sessions() as session:
            lag = await index_lag(session)
        assert lag.waiting == 1
        assert lag.oldest is not None
        assert "1 paper(s) not searchable yet" in lag.describe(datetime.now(UTC))
        assert await index_until_current(sessions) == 1
        assert await _ids(db_url, "alpha") == ["2609.00001"]
        async with sessions() as session:
            assert (await index_lag(session)).waiting == 0
        assert await index_until_current(sessions) == 0
        # A revised paper is queued again and re-indexed: its old text is gone.
        await _ingest(sessions, _record("2609.00001", "Beta agents", 2))
        assert await index_until_current(sessions) == 1
        assert await _ids(db_url, "alpha") == []
        assert await _ids(db_url, "beta") == ["2609.00001"]
        assert await count_rows(sessions, "paper_search") == 1
        # The same batch again changes nothing: nothing is queued, nothing re-indexed.
        await _ingest(sessions, _record("2609.00001", "Beta agents", 2))
        assert await count_rows(sessions, "paper_index_queue") == 0
        with pytest.raises(RuntimeError):
            await _ingest_then_fail(sessions)
        assert await count_rows(sessions, "paper_index_queue") == 0
        assert await index_until_current(sessions) == 0
        assert await _ids(db_url, "gamma") == []
        assert await count_rows(sessions, "paper_search") == 1
        assert await count_rows(sessions, "paper") == 1
    finally:
        await engine.dispose()


async def _index_then_crash(sessions: async_sessionmaker[AsyncSession]) -> None:
    async with sessions() as session, session.begin():
        assert await index_queued(session, 2) == 2
        raise RuntimeError("the indexer dies before its commit")


async def test_a_crash_between_batches_misses_nothing_and_indexes_nothing_twice(
    db_url: str,
) -> None:
    engine = create_async(db_url)
    sessions = session_factory(engine)
    try:
        titles = ["Alpha", "Beta", "Gamma", "Delta", "Epsilon"]
        await _ingest(
            sessions, *(_record(f"2609.0000{i}", f"{t} agents") for i, t in enumerate(titles))
        )
        async with sessions() as session, session.begin():
            assert await index_queued(session, 2) == 2  # one batch committed
        with pytest.raises(RuntimeError):
            await _index_then_crash(sessions)  # the next one rolled back
        assert await count_rows(sessions, "paper_search") == 2
        assert await count_rows(sessions, "paper_index_queue") == 3
        # The restart replays from the queue: the rest, once each.
        assert await index_until_current(sessions, batch=2) == 3
        assert await count_rows(sessions, "paper_search") == 5
        for i, title in enumerate(titles):
            assert await _ids(db_url, title.lower()) == [f"2609.0000{i}"]
        # Replaying a batch that was already indexed (queued again) rewrites, never adds.
        await _ingest(sessions, _record("2609.00000", "Alpha agents, revised", 2))
        assert await index_until_current(sessions) == 1
        assert await count_rows(sessions, "paper_search") == 5
        if db_url.startswith("sqlite"):
            assert await count_rows(sessions, "paper_fts") == 5
    finally:
        await engine.dispose()


async def test_a_huge_batch_commits_without_indexing(db_url: str) -> None:
    engine = create_async(db_url)
    sessions = session_factory(engine)
    try:
        records = [_record(f"2609.{i:05d}", f"Paper number {i}") for i in range(3000)]
        await _ingest(sessions, *records)
        # All stored and queued in ingest's transaction; the index has not been touched.
        assert await count_rows(sessions, "paper") == 3000
        assert await count_rows(sessions, "paper_index_queue") == 3000
        assert await count_rows(sessions, "paper_search") == 0
        assert await index_until_current(sessions, batch=1000) == 3000
        assert await count_rows(sessions, "paper_search") == 3000
        assert await count_rows(sessions, "paper_index_queue") == 0
    finally:
        await engine.dispose()
