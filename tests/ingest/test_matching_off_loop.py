"""Ingest matches papers in a worker thread: while a batch is matched (seconds for a huge
author list or 100,000 alerts), the event loop that answers Slack within 3 s runs on."""

from __future__ import annotations

import asyncio
import threading
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ingest.persist import ingest_batch
from bot.types import Author, Match, PaperRecord

NOW = datetime(2026, 7, 1, tzinfo=UTC)


class LoopProbe:
    """A matcher (our own seam) that, while it matches, asks the event loop to run one
    callback and waits for it: on the loop's own thread that callback could never run."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.threads: set[int] = set()

    def match(self, paper: PaperRecord) -> list[Match]:
        self.threads.add(threading.get_ident())
        answered = threading.Event()
        self.loop.call_soon_threadsafe(answered.set)
        # A deadlock guard, not a timing: a free loop answers at once.
        if not answered.wait(timeout=5):
            raise AssertionError("the event loop was blocked while papers were matched")
        return []


async def test_papers_are_matched_while_the_event_loop_keeps_running(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    probe = LoopProbe(asyncio.get_running_loop())
    record = PaperRecord(
        id="2607.00001",
        version=1,
        title="A paper",
        abstract="",
        authors=(Author("Ann Lee"),),
        categories=("cs.LG",),
        published=NOW,
        updated=NOW,
        source="test",
    )
    async with sessions() as session, session.begin():
        report = await ingest_batch(session=session, records=[record], matcher=probe, now=NOW)
    assert report.new == ["2607.00001"]
    assert threading.get_ident() not in probe.threads
