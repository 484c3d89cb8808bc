"""The indexer job: woken after ingest, it makes new papers findable within moments; and
the root's collector thresholds, which ingest's per-paper objects made matter."""

from __future__ import annotations

import asyncio
import gc
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import collector
from bot.ask.index import index_until_current
from bot.ask.service import Asker
from bot.config import Settings
from bot.ingest.persist import ingest_batch
from bot.service.indexer import Indexer
from bot.service.root import open_papertide
from bot.store.engine import create_engine, session_factory
from bot.types import Match, PaperRecord
from tests.conftest import count_rows

WHEN = datetime(2026, 6, 1, tzinfo=UTC)


class NoMatches:
    def match(self, paper: PaperRecord) -> list[Match]:
        return []


def _record(pid: str, title: str) -> PaperRecord:
    return PaperRecord(
        id=pid, version=1, title=title, abstract="", authors=(), categories=("cs.LG",),
        published=WHEN, updated=WHEN, source="test",
    )  # fmt: skip


async def _until_queue_empty(sessions: async_sessionmaker[AsyncSession]) -> None:
    for _ in range(500):
        if not await count_rows(sessions, "paper_index_queue"):
            return
        await asyncio.sleep(0.02)
    raise AssertionError("the indexer did not catch up within 10 s")


async def test_the_running_indexer_is_woken_by_ingest(db_url: str) -> None:
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    # An idle period far longer than the test: only the wake-up can index in time.
    indexer = Indexer(sessions, idle_seconds=3600)
    stop = asyncio.Event()
    task = asyncio.create_task(indexer.run(stop))
    try:
        await asyncio.sleep(0)  # the loop starts and catches up with nothing
        for n, title in enumerate(["Wombat estimators", "Quokka bounds"]):
            async with sessions() as session, session.begin():
                await ingest_batch(
                    session=session, records=[_record(f"2606.0000{n}", title)], matcher=NoMatches()
                )
            assert indexer.running
            await indexer.after_ingest()  # the running loop is woken, not awaited
            await _until_queue_empty(sessions)
            found = await Asker(sessions=sessions).search(title, topic=None, limit=5)
            assert [s.paper_id for s in found.ranked] == [f"2606.0000{n}"]
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
        await engine.dispose()
    assert not indexer.running


async def test_without_a_running_loop_after_ingest_catches_up_at_once(db_url: str) -> None:
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    try:
        async with sessions() as session, session.begin():
            await ingest_batch(
                session=session, records=[_record("2606.00009", "Numbat")], matcher=NoMatches()
            )
        await Indexer(sessions).after_ingest()
        assert await count_rows(sessions, "paper_index_queue") == 0
        assert await count_rows(sessions, "paper_search") == 1
    finally:
        await engine.dispose()


async def test_the_root_raises_the_collectors_thresholds(
    sqlite_url: str,
) -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        async with open_papertide(Settings(database_url=sqlite_url)):
            assert gc.get_threshold() == collector.THRESHOLDS
    finally:
        gc.set_threshold(*before)


async def test_a_stop_ends_the_catch_up_between_batches_and_the_queue_keeps_the_rest(
    db_url: str,
) -> None:
    """After a backfill the backlog may take minutes; shutdown must not wait for it."""
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    try:
        records = [_record(f"2606.001{n:02d}", f"Bilby {n}") for n in range(5)]
        async with sessions() as session, session.begin():
            await ingest_batch(session=session, records=records, matcher=NoMatches())
        stop = asyncio.Event()
        batches = 0

        class StopAfterTwo(asyncio.Event):
            def is_set(self) -> bool:  # the loop asks before each batch
                nonlocal batches
                batches += 1
                return batches > 2

        assert await index_until_current(sessions, 1, stop=StopAfterTwo()) == 2
        assert await count_rows(sessions, "paper_index_queue") == 3
        stop.set()
        await asyncio.wait_for(Indexer(sessions).run(stop), 5)  # stopped before: no batch
        assert await count_rows(sessions, "paper_index_queue") == 3
        assert await index_until_current(sessions, 1) == 3  # nothing was lost
    finally:
        await engine.dispose()
