"""The delivery worker: claim with a lease → send concurrently → settle the results.

One `Worker` per process; any number of processes share one PostgreSQL outbox.
Sends run as tasks bounded by `worker_concurrency`; results are settled in small
batches (one transaction per flush) so the database is not the bottleneck. On stop
(SIGTERM) the worker claims nothing more, lets sends in progress finish (up to a
grace period) and gives rows it has not started back to the queue. When the store
does not answer, every loop backs off (`StoreHealth`) instead of spinning.
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from collections.abc import Callable, Mapping
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot import metrics
from bot.config import Settings
from bot.outbox.channel import Channel, Delivered, DeliveryResult, Failed, Retry
from bot.outbox.fanout import fold_held
from bot.outbox.outage import StoreHealth
from bot.outbox.pacing import Pacer, PacingStrategy, rates_from_settings
from bot.outbox.queue import (
    Claimed,
    bury_disabled,
    claim_batch,
    release,
    renew_leases,
    requeue_expired,
)
from bot.outbox.reads import count_by_status
from bot.outbox.settle import backoff_seconds, settle
from bot.timeutil import utcnow
from bot.types import OutboundMessage, Platform

log = logging.getLogger(__name__)

FLUSH_SECONDS = 0.05
# Settle once this many results wait, or when the oldest has waited FLUSH_MAX_SECONDS:
# one transaction per few dozen rows instead of one per tick (a transaction costs the
# worker about as much CPU as a dozen posts), while a quiet worker still settles promptly.
FLUSH_ROWS = 64
FLUSH_MAX_SECONDS = 0.25
SHUTDOWN_GRACE_SECONDS = 10.0
DEPTH_EVERY_SECONDS = 30.0


def new_owner_id() -> str:
    """host:pid:random, so leases name the process that holds them."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


class Worker:
    """Delivers outbox rows through `channels` until `stop` is set."""

    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        channels: Mapping[Platform, Channel],
        settings: Settings,
        pacer: PacingStrategy | None = None,
        owner: str | None = None,
        idle_seconds: float = 0.2,
        backoff: Callable[[int], float] = backoff_seconds,
        health: StoreHealth | None = None,
    ) -> None:
        self.owner = owner or new_owner_id()
        self._sessions = sessions
        self._channels = dict(channels)
        self._settings = settings
        self._pacer: PacingStrategy = pacer or Pacer(rates_from_settings(settings))
        self.health = health or StoreHealth()
        self._idle = idle_seconds
        self._backoff = backoff
        self._sem = asyncio.Semaphore(max(1, settings.worker_concurrency))
        self._tasks: dict[asyncio.Task[None], Claimed] = {}
        self._sending: set[int] = set()
        self._gone: dict[int, str] = {}  # targets disabled while this worker ran
        self._results: list[tuple[Claimed, DeliveryResult]] = []
        self._oldest_result = 0.0  # monotonic time the oldest unsettled result arrived
        self._unsent: list[Claimed] = []
        self._room = asyncio.Event()
        batch = max(1, settings.outbox_batch_size)
        self._capacity = 2 * batch
        # Claim whole batches: a claim costs the same for 50 rows as for 100.
        self._low_water = batch
        lease = settings.outbox_lease_seconds
        self._upkeep_every = max(0.5, min(5.0, lease / 3))
        self._depth_due = 0.0

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    async def run(self, stop: asyncio.Event) -> None:
        """Claim, send and settle until `stop` is set; then drain and release."""
        log.info(
            "worker.start",
            extra={"owner": self.owner, "platforms": ",".join(sorted(map(str, self._channels)))},
        )
        flusher = asyncio.create_task(self._flush_loop(stop))
        upkeep = asyncio.create_task(self._upkeep_loop(stop))
        try:
            await self._claim_loop(stop)
        finally:
            await self._drain()
            upkeep.cancel()
            flusher.cancel()
            # Wait for both to finish unwinding (gather without return_exceptions would
            # return at the first CancelledError): a flush cancelled mid-transaction puts
            # its results back, and the last flush below must see them.
            await asyncio.gather(upkeep, flusher, return_exceptions=True)
            await self._flush()
            log.info("worker.stop", extra={"owner": self.owner})

    async def _claim_loop(self, stop: asyncio.Event) -> None:
        # Up to two batches are held at once: the next claim runs while the last one
        # is still being sent, so the database round trip never leaves sends idle.
        batch = max(1, self._settings.outbox_batch_size)
        while not stop.is_set():
            self._room.clear()
            room = self._capacity - len(self._tasks)
            if room < self._low_water:
                await self._wait(stop, self._room, 1.0)  # busy: until sends free room
                continue
            try:
                got = await self._claim(min(batch, room))
            except Exception as exc:
                await self._wait(stop, None, self.health.failed("claim", exc))
                continue
            self.health.succeeded()
            if got == 0:
                await self._wait(stop, None, self._idle)  # idle: poll again shortly

    @staticmethod
    async def _wait(stop: asyncio.Event, other: asyncio.Event | None, seconds: float) -> None:
        waits = [asyncio.ensure_future(stop.wait())]
        if other is not None:
            waits.append(asyncio.ensure_future(other.wait()))
        _, pending = await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        for fut in pending:
            fut.cancel()

    async def _claim(self, limit: int) -> int:
        # Claim, pace and give back what must wait, in one transaction: shared pacing
        # rows stay locked only that long, and a crash leaves nothing half-done.
        async with self._sessions() as session, session.begin():
            claimed = await claim_batch(
                session=session,
                owner=self.owner,
                limit=limit,
                lease_seconds=self._settings.outbox_lease_seconds,
                platforms=[str(p) for p in self._channels],
            )
            slots = await self._pacer.reserve_all(session, [c.message.target for c in claimed])
            deferred = [
                (item, utcnow() + timedelta(seconds=slot.wait))
                for item, slot in zip(claimed, slots, strict=True)
                if slot.defer
            ]
            if deferred:
                await release(session=session, owner=self.owner, items=deferred)
        for item, slot in zip(claimed, slots, strict=True):
            if not slot.defer:
                task = asyncio.create_task(self._deliver(item, slot.wait))
                self._tasks[task] = item
                task.add_done_callback(self._task_done)
        return len(claimed)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.pop(task, None)
        if self._capacity - len(self._tasks) >= self._low_water:
            self._room.set()

    async def _deliver(self, item: Claimed, wait: float) -> None:
        message = item.message
        try:
            if wait > 0:
                await asyncio.sleep(wait)
            async with self._sem:
                self._sending.add(message.id)
                started = time.perf_counter()
                result = await self._send(item)
        except asyncio.CancelledError:
            if message.id not in self._sending:
                self._unsent.append(item)  # never started: goes back to the queue
                return
            raise
        finally:
            self._sending.discard(message.id)
        platform = str(message.target.platform)
        metrics.SEND_SECONDS.labels(platform).observe(time.perf_counter() - started)
        if isinstance(result, Delivered):
            metrics.SENT.labels(platform).inc()
            age = (utcnow() - item.created_at).total_seconds()
            metrics.ENQUEUE_TO_SEND_SECONDS.labels(platform).observe(max(0.0, age))
        elif isinstance(result, Retry) and message.attempt < self._settings.outbox_max_attempts:
            if result.after is not None:
                await self._block(message, result.after)
            metrics.RETRIED.labels(platform).inc()
            log.info("worker.retry", extra={"id": message.id, "reason": result.reason})
        else:
            metrics.DEAD.labels(platform).inc()
            if isinstance(result, Failed) and result.disable_target:
                metrics.TARGETS_DISABLED.labels(platform).inc()
            log.warning("worker.dead", extra={"id": message.id, "reason": result.reason})
        if not self._results:
            self._oldest_result = time.monotonic()
        self._results.append((item, result))

    async def _block(self, message: OutboundMessage, seconds: float) -> None:
        try:
            await self._pacer.block(message.target, seconds)
        except Exception as exc:  # the row's own retry time still holds it back
            log.warning("worker.block_failed", extra={"id": message.id, "error": str(exc)})

    async def _send(self, item: Claimed) -> DeliveryResult:
        target = item.message.target
        if target.id in self._gone:
            # Claimed in the same batch as the send that found the target gone: don't try.
            return Failed(f"target disabled: {self._gone[target.id]}")
        channel = self._channels.get(target.platform)
        if channel is None:  # claim filters by platform; kept for safety
            return Retry(f"no channel for {target.platform}")
        try:
            result = await channel.send(item.message)
        except Exception as exc:
            # A channel must not raise; if one does, the message is retried, not lost.
            log.exception("worker.channel_raised", extra={"id": item.message.id})
            return Retry(f"channel raised {type(exc).__name__}: {exc}")
        if isinstance(result, Failed) and result.disable_target:
            self._gone[target.id] = result.reason
        return result

    def _flush_due(self) -> bool:
        if self._unsent or len(self._results) >= FLUSH_ROWS:
            return True
        return bool(self._results) and time.monotonic() - self._oldest_result >= FLUSH_MAX_SECONDS

    async def _flush_loop(self, stop: asyncio.Event) -> None:
        pause = FLUSH_SECONDS
        while True:
            await asyncio.sleep(pause)
            if not self._flush_due():
                continue
            try:
                await self._flush()
            except Exception as exc:
                pause = max(FLUSH_SECONDS, self.health.failed("flush", exc))
            else:
                pause = FLUSH_SECONDS

    async def _flush(self) -> None:
        results, self._results = self._results, []
        unsent, self._unsent = self._unsent, []
        if not results and not unsent:
            return
        try:
            async with self._sessions() as session, session.begin():
                counts = await settle(
                    session=session,
                    owner=self.owner,
                    results=results,
                    max_attempts=self._settings.outbox_max_attempts,
                    backoff=self._backoff,
                )
                await release(session=session, owner=self.owner, items=[(u, None) for u in unsent])
        except BaseException:
            # Keep them for the next flush; the leases cover us meanwhile. BaseException:
            # a stop cancels the flush loop, maybe mid-transaction, and the final flush
            # must still settle these (settling twice is harmless: sent stays sent, and
            # a retry or death needs the lease this worker no longer holds).
            self._results[:0] = results
            self._unsent[:0] = unsent
            raise
        if counts.dead or counts.disabled:
            log.warning("worker.settled", extra={"dead": counts.dead, "disabled": counts.disabled})

    async def _upkeep_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            pause = self._upkeep_every
            try:
                await self.run_upkeep()
            except Exception as exc:
                pause = max(pause, self.health.failed("upkeep", exc))
            else:
                self.health.succeeded()
            await asyncio.sleep(pause)

    async def run_upkeep(self) -> None:
        """Renew our leases; requeue lapsed ones, bury disabled targets' rows, end quiet hours."""
        async with self._sessions() as session, session.begin():
            if self._tasks:
                await renew_leases(
                    session=session,
                    owner=self.owner,
                    lease_seconds=self._settings.outbox_lease_seconds,
                )
            requeued = await requeue_expired(session=session)
            await bury_disabled(session=session)
            await fold_held(session=session)
        if time.monotonic() >= self._depth_due:
            # A count over the whole table: cheap now, not on every tick at scale.
            self._depth_due = time.monotonic() + DEPTH_EVERY_SECONDS
            async with self._sessions() as session:
                metrics.set_queue_depth(await count_by_status(session=session))
        if requeued:
            log.warning("worker.requeued_expired", extra={"rows": requeued})

    async def _drain(self) -> None:
        """Stop: cancel sends not yet started, let started ones finish within the grace."""
        for task, item in list(self._tasks.items()):
            if item.message.id not in self._sending:
                task.cancel()
        pending = set(self._tasks)
        if pending:
            _, late = await asyncio.wait(pending, timeout=SHUTDOWN_GRACE_SECONDS)
            for task in late:
                # Unknown outcome; give the row back (a duplicate beats a loss).
                self._unsent.append(self._tasks[task])
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
