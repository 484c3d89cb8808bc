"""The full-text index: backfilled by migration 0005_fulltext, kept current by ingest in
its own transaction, on SQLite and PostgreSQL."""

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


async def test_ingest_keeps_the_index_current_in_its_transaction(db_url: str) -> None:
    engine = create_async(db_url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session, session.begin():
            await ingest_batch(
                session=session,
                records=[_record("2609.00001", "Alpha agents")],
                matcher=NoMatches(),
            )
        assert await _ids(db_url, "alpha") == ["2609.00001"]
        async with sessions() as session, session.begin():
            await ingest_batch(
                session=session,
                records=[_record("2609.00001", "Beta agents", 2)],
                matcher=NoMatches(),
            )
        assert await _ids(db_url, "alpha") == []
        assert await _ids(db_url, "beta") == ["2609.00001"]
        assert await count_rows(sessions, "paper_search") == 1
        with pytest.raises(RuntimeError):
            await _ingest_then_fail(sessions)
        assert await _ids(db_url, "gamma") == []
        assert await count_rows(sessions, "paper_search") == 1
        assert await count_rows(sessions, "paper") == 1
    finally:
        await engine.dispose()
