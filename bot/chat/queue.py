"""The work of chat commands after their acknowledgement: bounded, on a thread of its own.

A platform must acknowledge a command within seconds (Slack: 3 s) and the ack must not
wait for the database. So the adapter acks and hands the command's work to a
`CommandQueue`: a fixed number of workers, each with its own FIFO, and a bound on the
work waiting. Commands of one person (one `key`) always land on the same worker, so
they run and are answered in the order they were typed ("follow x" then "unfollow x"
never swap). When the bound is reached `submit` says no at once, and the adapter
answers "busy, try again" in the ack itself: nothing is dropped silently and the
backlog, hence the answer latency, cannot grow without limit. The bound is a number of
jobs (`capacity`) and, with `wait_budget`, a time: a job is refused when the jobs ahead
of it on its own worker would take longer than the budget, at the time a job has taken
lately (a moving average of the jobs' own durations, which under load include their
waits for the database and the CPU). Its own worker's line is what a job waits for:
people are spread over the workers by a hash, not evenly. The average starts from a
guess (`FIRST_JOB_SECONDS`) and is kept through quiet hours, so the first burst after a
start is bounded by time too: it was that burst that made the slowest answers.

The workers run on their own thread with their own event loop. A command costs a few
database round trips, each several awaits; on the acks' loop every one of them waited
behind a whole loop turn of ack work, so under load the answers fell ever further behind
the acks. Here the acks' loop only counts, hands the job across (`call_soon_threadsafe`)
and returns. A job therefore must only use what belongs to this thread:
`CommandWork.sessions` (an engine of its own, opened and disposed on this loop) and
clients that open their connections per call (or on this loop); what belongs to the
caller's loop is reached with `home`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import time
import zlib
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.store.engine import once_more_if_disconnected

log = logging.getLogger(__name__)

T = TypeVar("T")
Job = Callable[[], Awaitable[None]]
BUSY = "papertide is busy right now: nothing was done. Try again in a few seconds."
# Command work after the ack: this many workers (each a FIFO: one person's commands stay
# in order), at most this many commands waiting or running, then "busy" at once.
WORKERS = 8
CAPACITY = 64
DRAIN_SECONDS = 30.0  # at shutdown: accepted commands get this long to be answered
# A command is taken only if the jobs ahead of it on its worker should be done within this
# many seconds: under a flood the backlog is bounded by time, not only by CAPACITY, so an
# accepted command is answered well within a second (its wait, then its own run), the
# rest "busy" at once.
WAIT_BUDGET = 0.25
# What a job is taken to cost before any has finished (a command under load: the figure
# is learnt from the first jobs on); the weight of each finished job in the average.
FIRST_JOB_SECONDS = 0.1
JOB_SECONDS_WEIGHT = 0.2


class CommandQueue:
    """`workers` FIFOs on one thread, at most `capacity` jobs waiting or running in all.

    `submit` and `call` may be used from any thread; the thread starts with the first
    job. `on_stop` (and what `at_stop` adds) runs on the queue's own loop once it has
    drained, last added first: it closes what the jobs used there (their database engine,
    their HTTP session).
    """

    def __init__(
        self,
        *,
        workers: int = WORKERS,
        capacity: int = CAPACITY,
        on_stop: Callable[[], Awaitable[None]] | None = None,
        wait_budget: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        name: str = "papertide-commands",
    ) -> None:
        if workers < 1 or capacity < 1:
            raise ValueError("a command queue needs at least one worker and one slot")
        self.workers = workers
        self.capacity = capacity
        self.refused = 0  # commands answered "busy" since start
        self.wait_budget = wait_budget  # None: bounded by `capacity` alone
        self._clock = clock
        self.job_seconds = FIRST_JOB_SECONDS  # moving average of the jobs' durations
        self._started: list[float | None] = [None] * workers  # each worker's running job
        self._name = name
        self._on_stop: list[Callable[[], Awaitable[None]]] = [on_stop] if on_stop else []
        self._lock = threading.Lock()
        self._pending = 0
        self._closing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._queues: list[asyncio.Queue[Job]] = []
        self._depth = [0] * workers  # jobs waiting or running, per worker
        self._tasks: list[asyncio.Task[None]] = []
        self._idle: asyncio.Event | None = None  # set on the queue's loop when pending is 0
        self._stopped = threading.Event()
        self._homes: set[concurrent.futures.Future[None]] = set()

    @property
    def pending(self) -> int:
        """Jobs accepted and not finished yet."""
        return self._pending

    def submit(self, key: str, job: Job) -> bool:
        """Queue `job` behind the earlier jobs of `key`; False (nothing queued) when full or
        stopping."""
        worker = self._worker(key)
        with self._lock:
            accepted = not self._refusing(worker)
            if accepted:
                self._pending += 1
                self._depth[worker] += 1
                if self._thread is None:
                    self._start()
        if not accepted:
            self._count_refusal()
            return False
        assert self._loop is not None
        self._loop.call_soon_threadsafe(self._queues[worker].put_nowait, job)
        return True

    def refuses(self, key: str) -> bool:
        """Would a job of `key` be refused now? If so it counts as refused: an adapter
        answers "busy" at once, before it spends anything more on the request (a yes
        here may still meet a no from `submit` a moment later, never the other way)."""
        worker = self._worker(key)
        with self._lock:
            refusing = self._refusing(worker)
        if refusing:
            self._count_refusal()
        return refusing

    def _worker(self, key: str) -> int:
        # crc32, not hash(): the same person lands on the same worker in every process run.
        return zlib.crc32(key.encode()) % self.workers

    def _refusing(self, worker: int) -> bool:
        return self._closing or self._pending >= self.capacity or self._over_budget(worker)

    def _count_refusal(self) -> None:
        with self._lock:
            self.refused += 1
            refused = self.refused
        if refused % 100 == 1:  # one line per hundred: a flood must not flood the log
            log.warning("chat.queue_full", extra={"refused": refused})

    def _over_budget(self, worker: int) -> bool:
        """Would a new job for `worker` wait `wait_budget` or more: the jobs ahead of it
        at the average job's time, the running one at least as long as it has run?"""
        depth = self._depth[worker]
        if self.wait_budget is None or depth == 0:
            return False
        started = self._started[worker]
        running = self._clock() - started if started is not None else 0.0
        ahead = max(self.job_seconds, running) + (depth - 1) * self.job_seconds
        return ahead >= self.wait_budget

    def call(
        self, key: str, work: Callable[[], Awaitable[T]]
    ) -> concurrent.futures.Future[T] | None:
        """Like `submit`, for work whose result the caller awaits (`asyncio.wrap_future`)
        on its own loop; None when full. The work's exception is the future's."""
        result: concurrent.futures.Future[T] = concurrent.futures.Future()

        async def job() -> None:
            if not result.set_running_or_notify_cancel():
                return
            try:
                result.set_result(await work())
            except BaseException as exc:  # the caller's await raises it
                result.set_exception(exc)

        return result if self.submit(key, job) else None

    def home(self, coro: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop) -> None:
        """Run `coro` on `loop` (the acks' loop), for work that needs its clients; kept
        referenced until done, a failure logged."""
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        self._homes.add(future)
        future.add_done_callback(self._home_done)

    def _home_done(self, future: concurrent.futures.Future[None]) -> None:
        self._homes.discard(future)
        if not future.cancelled() and future.exception() is not None:
            log.error("chat.home_failed", exc_info=future.exception())

    def at_stop(self, close: Callable[[], Awaitable[None]]) -> None:
        """Run `close` on the queue's loop when it stops (before what was added earlier)."""
        self._on_stop.append(close)

    async def join(self) -> None:
        """Wait until every accepted job has finished (tests, graceful stops)."""
        if self._loop is None or self._stopped.is_set():
            return
        await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._drained(), self._loop))

    async def close(self, *, drain_seconds: float = DRAIN_SECONDS) -> None:
        """Refuse new jobs, let the accepted ones finish (at most `drain_seconds`), then
        stop the thread; then wait for the work they sent `home` (a `/papers ask`
        answer), in what is left of `drain_seconds`. Whatever is still running after
        that is cancelled and logged."""
        deadline = time.monotonic() + drain_seconds
        with self._lock:
            self._closing = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            if not self._stopped.is_set():
                self._stopped.set()
                await self._run_stops()  # never started: nothing ran on another loop
            return
        if not self._stopped.is_set():
            stopping = asyncio.run_coroutine_threadsafe(self._stop(drain_seconds), loop)
            await asyncio.wrap_future(stopping)
        await asyncio.to_thread(thread.join)
        await self._settle_homes(deadline - time.monotonic())

    async def _settle_homes(self, limit: float) -> None:
        # The homes' loop is the caller's (the acks' loop, which closes the queue at
        # shutdown): it keeps running them while this waits.
        homes = list(self._homes)
        if not homes:
            return
        _, late = await asyncio.wait([asyncio.wrap_future(f) for f in homes], timeout=max(limit, 0))
        if late:
            log.error("chat.followups_abandoned", extra={"pending": len(late)})
            for future in self._homes:
                future.cancel()

    # --- the queue's own thread ------------------------------------------------------------

    def _start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self._loop = loop
            self._idle = asyncio.Event()
            self._queues = [asyncio.Queue() for _ in range(self.workers)]
            self._tasks = [loop.create_task(self._work(w)) for w in range(self.workers)]
            ready.set()
            try:
                loop.run_forever()
            finally:
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=run, name=self._name, daemon=True)
        self._thread.start()
        ready.wait()

    async def _work(self, worker: int) -> None:
        queue = self._queues[worker]
        while True:
            job = await queue.get()
            self._started[worker] = started = self._clock()
            try:
                await job()
            except Exception:
                # A job answers its own failures; this only keeps the worker alive.
                log.exception("chat.job_failed")
            finally:
                with self._lock:
                    self._pending -= 1
                    self._depth[worker] -= 1
                    self._started[worker] = None
                    took = self._clock() - started
                    self.job_seconds += JOB_SECONDS_WEIGHT * (took - self.job_seconds)
                    idle = self._pending == 0
                if idle and self._idle is not None:
                    self._idle.set()

    async def _run_stops(self) -> None:
        for close in reversed(self._on_stop):
            try:
                await close()
            except Exception:
                log.exception("chat.queue_stop_failed")

    async def _drained(self) -> None:
        assert self._idle is not None
        while self._pending:
            self._idle.clear()
            await self._idle.wait()

    async def _stop(self, drain_seconds: float) -> None:
        try:
            await asyncio.wait_for(self._drained(), drain_seconds)
        except TimeoutError:
            log.error("chat.queue_abandoned", extra={"pending": self._pending})
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._run_stops()
        self._stopped.set()
        asyncio.get_running_loop().stop()


def person_key(workspace: str, user: str) -> str:
    """The queue key of one person's commands (their order is kept per key)."""
    return f"{workspace}:{user}"


@dataclass(frozen=True, slots=True)
class CommandWork:
    """The command queue and the sessions its jobs use: an engine of the queue's own
    thread (built by the composition root), never to be used on another loop."""

    queue: CommandQueue
    sessions: async_sessionmaker[AsyncSession]

    async def run(self, work: Callable[[AsyncSession], Awaitable[T]]) -> T:
        """`work` in a session of the queue's engine (it commits what it keeps); run
        again on a fresh connection if the database had dropped this one. The engine
        does not ping a connection before each use (a round trip per command), so this
        is how a command survives a database restart."""

        async def once() -> T:
            async with self.sessions() as session:
                return await work(session)

        return await once_more_if_disconnected(once)
