"""Per-target pacing: a chat channel gets at most its platform's rate, whatever the
number of workers. This module is the one writer of the `pacing` table.

Each paced key (a chat target, or the one SMTP relay all mail shares) has a
next-allowed time. A worker reserves slots for the messages it just claimed: a slot
within the short horizon is waited for (the lease is held only that long); a later
slot sends the row back to the queue with `next_attempt_at` at that slot, so a busy
channel never holds leases or blocks the other targets.

Two implementations of one small interface:
- `Pacer` keeps the times in this process (a monotonic clock). One process is the
  whole install on SQLite, and it is free: no statement per claim.
- `SharedPacer` keeps them in the `pacing` table on the database's clock, read and
  written under row locks in the claim's own transaction (one INSERT, one SELECT …
  FOR UPDATE and one UPDATE per claimed batch, not per message), so N workers together
  respect each channel's rate. `pacing_scope=auto` picks it on PostgreSQL.
The platform's 429 with Retry-After (honoured exactly, and fed back via `block`)
remains the backstop either way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import SQLModel, col

from bot.config import Settings
from bot.store.dialect import dialect_insert
from bot.store.models import Pacing as PacingRow
from bot.types import Platform, TargetRef

DEFAULT_HORIZON_SECONDS = 2.0


def rates_from_settings(settings: Settings) -> dict[Platform, float]:
    """Messages per second per paced key, by platform (unlisted platforms are unpaced)."""
    return {
        Platform.SLACK: settings.slack_rate_per_second,
        Platform.DISCORD: settings.discord_rate_per_second,
        Platform.EMAIL: settings.email_rate_per_second,
        Platform.APPRISE: settings.apprise_rate_per_second,
    }


def pace_key(target: TargetRef) -> str:
    # All mail goes through one relay, so the relay is the paced thing, not the mailbox.
    if target.platform is Platform.EMAIL:
        return "email"
    return f"target:{target.id}"


@dataclass(frozen=True, slots=True)
class Slot:
    """When a message may go: `wait` seconds from now; `defer` when beyond the horizon."""

    wait: float
    defer: bool


class PacingStrategy(Protocol):
    """What the worker needs: slots for a claimed batch, and "slow down" from a platform."""

    async def reserve_all(
        self, session: AsyncSession, targets: Sequence[TargetRef]
    ) -> list[Slot]: ...

    async def block(self, target: TargetRef, seconds: float) -> None: ...


class _Plan:
    """The pure part both pacers share: slots from next-allowed times, in claim order."""

    def __init__(self, intervals: Mapping[Platform, float], horizon: float) -> None:
        self.intervals = intervals
        self.horizon = horizon

    def slot(
        self, target: TargetRef, now: float, nexts: dict[str, float], deferred: dict[str, float]
    ) -> Slot:
        interval = self.intervals.get(target.platform)
        key = pace_key(target)
        blocked_until = nexts.get(key, 0.0)
        if interval is None:
            # Unpaced platforms still honour a Retry-After fed back through `block`.
            wait = max(0.0, blocked_until - now)
            return Slot(wait=wait, defer=wait > self.horizon)
        start = max(now, blocked_until)
        if start - now > self.horizon:
            # Spread the deferred rows one interval apart, so they come back in order
            # instead of all at once (each would bounce again).
            later = max(start, deferred.get(key, 0.0))
            deferred[key] = later + interval
            return Slot(wait=later - now, defer=True)
        nexts[key] = start + interval
        return Slot(wait=start - now, defer=False)


class Pacer:
    """Next-allowed time per paced key, in this process, on a monotonic clock."""

    def __init__(
        self,
        rates: Mapping[Platform, float],
        *,
        horizon: float = DEFAULT_HORIZON_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._plan = _Plan({p: 1.0 / r for p, r in rates.items() if r and r > 0}, horizon)
        self._clock = clock
        self._next: dict[str, float] = {}
        self._deferred: dict[str, float] = {}

    def reserve(self, target: TargetRef) -> Slot:
        """Take the target's next slot, or say how long to defer without taking it."""
        return self._plan.slot(target, self._clock(), self._next, self._deferred)

    async def reserve_all(self, session: AsyncSession, targets: Sequence[TargetRef]) -> list[Slot]:
        return [self.reserve(t) for t in targets]

    async def block(self, target: TargetRef, seconds: float) -> None:
        """The platform said "slow down": nothing goes to this key for `seconds`."""
        key = pace_key(target)
        self._next[key] = max(self._next.get(key, 0.0), self._clock() + seconds)


async def _db_now(session: AsyncSession) -> float:
    """Seconds since the epoch on the database's clock: one timeline for every host."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        query = text("SELECT extract(epoch from clock_timestamp())")
    else:
        query = text("SELECT (julianday('now') - 2440587.5) * 86400.0")
    return float((await session.execute(query)).scalar_one())


async def _next_times(session: AsyncSession, keys: list[str], *, lock: bool) -> dict[str, float]:
    query = (
        select(col(PacingRow.key), col(PacingRow.next_at))
        .where(col(PacingRow.key).in_(keys))
        .order_by(col(PacingRow.key))
    )
    if lock:
        query = query.with_for_update()
    return {str(k): float(v) for k, v in (await session.execute(query)).all()}


class SharedPacer:
    """Next-allowed times in the `pacing` table, shared by every worker (PostgreSQL)."""

    def __init__(
        self,
        rates: Mapping[Platform, float],
        sessions: async_sessionmaker[AsyncSession],
        *,
        horizon: float = DEFAULT_HORIZON_SECONDS,
    ) -> None:
        self._plan = _Plan({p: 1.0 / r for p, r in rates.items() if r and r > 0}, horizon)
        self._sessions = sessions
        # Deferred rows of this process are spread apart here; another process defers
        # its own from the same shared next-allowed time, a little later at worst.
        self._deferred: dict[str, float] = {}

    async def reserve_all(self, session: AsyncSession, targets: Sequence[TargetRef]) -> list[Slot]:
        """Slots for `targets` in order, under row locks held until the caller commits."""
        if not targets:
            return []
        paced = sorted({pace_key(t) for t in targets if t.platform in self._plan.intervals})
        free = sorted({pace_key(t) for t in targets} - set(paced))
        before: dict[str, float] = {}
        if paced:
            # Sorted, so two workers lock the same keys in the same order (no deadlock).
            await session.execute(
                dialect_insert(session, PacingRow)
                .values([{"key": k, "next_at": 0.0} for k in paced])
                .on_conflict_do_nothing(index_elements=["key"])
            )
            before.update(await _next_times(session, paced, lock=True))
        if free:  # unpaced platforms: only a Retry-After someone stored holds them back
            before.update(await _next_times(session, free, lock=False))
        now = await _db_now(session)
        nexts = dict(before)
        slots = [self._plan.slot(t, now, nexts, self._deferred) for t in targets]
        changed = [{"k": k, "v": v} for k, v in nexts.items() if before.get(k) != v]
        if changed:
            # Core executemany (the ORM's bulk UPDATE insists on naming the primary key).
            table = SQLModel.metadata.tables["pacing"]
            await session.execute(
                update(table).where(table.c.key == bindparam("k")).values(next_at=bindparam("v")),
                changed,
            )
        return slots

    async def block(self, target: TargetRef, seconds: float) -> None:
        """Nothing goes to the target's key for `seconds`, in any worker."""
        key = pace_key(target)
        async with self._sessions() as session, session.begin():
            now = await _db_now(session)
            stmt = dialect_insert(session, PacingRow).values(key=key, next_at=now + seconds)
            postgres = session.bind is not None and session.bind.dialect.name == "postgresql"
            later = func.greatest if postgres else func.max
            await session.execute(
                stmt.on_conflict_do_update(
                    index_elements=["key"],
                    set_={"next_at": later(col(PacingRow.next_at), stmt.excluded.next_at)},
                )
            )


def build_pacing(
    settings: Settings, sessions: async_sessionmaker[AsyncSession], dialect: str
) -> PacingStrategy:
    """The pacer `pacing_scope` asks for: the store's (auto on PostgreSQL) or this process's."""
    rates = rates_from_settings(settings)
    scope = settings.pacing_scope
    if scope == "store" or (scope == "auto" and dialect == "postgresql"):
        return SharedPacer(rates, sessions)
    return Pacer(rates)
