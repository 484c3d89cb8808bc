"""Running a bot's own loop until papertide stops, answering what it took first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from bot.chat.queue import DRAIN_SECONDS

log = logging.getLogger(__name__)


class InFlight:
    """The handlers that took a command and have not answered it yet.

    A bot answers through its own client (Discord's HTTP session), so at shutdown that
    client must outlive them: `settle` refuses new work and waits for these first.
    """

    def __init__(self) -> None:
        self.closing = False  # set by `settle`: handlers answer "busy" instead of taking work
        self._count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    @contextlib.asynccontextmanager
    async def track(self) -> AsyncIterator[None]:
        """Count the block as one handler in flight until it returns or raises."""
        self._count += 1
        self._idle.clear()
        try:
            yield
        finally:
            self._count -= 1
            if self._count == 0:
                self._idle.set()

    async def settle(self, limit: float = DRAIN_SECONDS) -> None:
        """Refuse new work; wait (at most `limit` s: shutdown must not hang) until every
        handler in flight has answered."""
        self.closing = True
        try:
            async with asyncio.timeout(limit):
                await self._idle.wait()
        except TimeoutError:
            log.error("chat.answers_abandoned", extra={"in_flight": self._count})


async def until_stopped(
    work: Coroutine[Any, Any, None],
    stop: asyncio.Event,
    *,
    settle: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Run `work` (a bot that runs until cancelled) until it ends or `stop` is set;
    `settle` runs before `work` is cancelled (the bot's client is still open then)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(stop.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if settle is not None:
        await settle()
    if not task.done():
        task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
