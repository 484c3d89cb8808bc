"""The work of chat commands after their acknowledgement: bounded, apart from the ack path.

A platform must acknowledge a command within seconds (Slack: 3 s) and the ack must not
wait for the database. So the adapter acks and hands the command's work to a
`CommandQueue`: a fixed number of workers, each with its own FIFO, and a bound on the
work waiting. Commands of one person (one `key`) always land on the same worker, so
they run and are answered in the order they were typed ("follow x" then "unfollow x"
never swap). When the bound is reached `submit` says no at once, and the adapter
answers "busy, try again" in the ack itself: nothing is dropped silently and the
backlog, hence the answer latency, cannot grow without limit.
"""

from __future__ import annotations

import asyncio
import logging
import zlib
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]
BUSY = "papertide is busy right now: nothing was done. Try again in a few seconds."


class CommandQueue:
    """`workers` FIFOs, at most `capacity` jobs waiting or running in all of them."""

    def __init__(self, *, workers: int = 8, capacity: int = 64) -> None:
        if workers < 1 or capacity < 1:
            raise ValueError("a command queue needs at least one worker and one slot")
        self.workers = workers
        self.capacity = capacity
        self._pending = 0
        self.refused = 0  # commands answered "busy" since start
        self._queues: list[asyncio.Queue[Job]] = []
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def pending(self) -> int:
        """Jobs accepted and not finished yet."""
        return self._pending

    def submit(self, key: str, job: Job) -> bool:
        """Queue `job` behind the earlier jobs of `key`; False (nothing queued) when full."""
        if self._pending >= self.capacity:
            self.refused += 1
            if self.refused % 100 == 1:  # one line per hundred: a flood must not flood the log
                log.warning("chat.queue_full", extra={"refused": self.refused})
            return False
        if not self._tasks:
            self._start()
        self._pending += 1
        # crc32, not hash(): the same person lands on the same worker in every process run.
        self._queues[zlib.crc32(key.encode()) % self.workers].put_nowait(job)
        return True

    def _start(self) -> None:
        self._queues = [asyncio.Queue() for _ in range(self.workers)]
        self._tasks = [asyncio.create_task(self._work(q)) for q in self._queues]

    async def _work(self, queue: asyncio.Queue[Job]) -> None:
        while True:
            job = await queue.get()
            try:
                await job()
            except Exception:
                # A job answers its own failures; this only keeps the worker alive.
                log.exception("chat.job_failed")
            finally:
                self._pending -= 1
                queue.task_done()

    async def join(self) -> None:
        """Wait until every accepted job has finished (tests, graceful stops)."""
        for queue in self._queues:
            await queue.join()

    async def close(self) -> None:
        """Stop the workers; jobs still queued are abandoned."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks, self._queues, self._pending = [], [], 0
