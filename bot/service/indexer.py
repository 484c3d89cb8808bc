"""The full-text indexer: catches the index up with the papers ingest stored, off its path.

Ingest only queues paper ids (bot/ask/index.py); this job indexes them. In `serve` it
runs beside the scheduler and is woken after each poll, so `/papers ask` finds new papers
seconds after their batch committed; it also looks every `idle_seconds` for papers that
another process (`papertide poll --once`, a crash before the wake-up) queued. Outside
`serve` (one-shot polls, the demo, tests) nothing runs in the background, so the root
catches up right after the poll instead (`after_ingest`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.index import index_until_current

log = logging.getLogger(__name__)

IDLE_SECONDS = 60.0
RETRY_SECONDS = 5.0


class Indexer:
    """Wakes on `wake()` (or every `idle_seconds`) and indexes until the queue is empty."""

    def __init__(
        self, sessions: async_sessionmaker[AsyncSession], *, idle_seconds: float = IDLE_SECONDS
    ) -> None:
        self._sessions = sessions
        self._idle = idle_seconds
        self._woken = asyncio.Event()
        self.running = False

    def wake(self) -> None:
        """Papers were queued: index them soon."""
        self._woken.set()

    async def catch_up(self, stop: asyncio.Event | None = None) -> int:
        """Index everything queued now (until `stop`, between batches); returns how many
        papers."""
        done = await index_until_current(self._sessions, stop=stop)
        if done:
            log.info("indexer.done", extra={"papers": done})
        return done

    async def after_ingest(self) -> None:
        """Ingest committed papers: wake the running loop, or catch up now if none runs."""
        if self.running:
            self.wake()
        else:
            await self.catch_up()

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop`: catch up, then wait for a wake-up or the idle period."""
        self.running = True
        try:
            while not stop.is_set():
                self._woken.clear()
                pause = self._idle
                try:
                    # A backfill's backlog may take minutes: shutdown doesn't wait for it.
                    await self.catch_up(stop)
                except Exception:
                    # The queue keeps the work; the next round does it.
                    log.exception("indexer.failed")
                    pause = RETRY_SECONDS
                stopping = asyncio.ensure_future(stop.wait())
                woken = asyncio.ensure_future(self._woken.wait())
                try:
                    await asyncio.wait(
                        {stopping, woken}, timeout=pause, return_when=asyncio.FIRST_COMPLETED
                    )
                finally:
                    for task in (stopping, woken):
                        task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await asyncio.gather(stopping, woken, return_exceptions=True)
        finally:
            self.running = False
