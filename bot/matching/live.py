"""The poller's live engine: compiled once per process, then kept current by deltas.

Compiling every alert costs seconds (about 40 s for 1M alerts); a poll runs every few
minutes, and between two polls a handful of alerts change. So the process that polls
(the leader in `serve`, `Papertide.poll`) keeps one `MatchEngine` for its whole life
and, before each poll, applies only what changed:

- alerts: the `alert_change` feed (written by triggers on `alert`, migration
  0007_speed_ingest, so changes made by any process, and deletions cascading from a
  target, all appear). Each row names an alert; the alert's current row is re-read
  and the engine adds (replaces) or removes it, so a change replayed twice is harmless.
- topics: a few hundred rows, written by the catalog's sync: read whole and diffed.

PostgreSQL hands out `seq` when a row is inserted, not when it commits, so a reader can
see seq 11 while seq 10 is still in flight. Missing numbers below the highest seq seen
are kept as *holes* and asked for again at every refresh until they appear, or until
`hole_seconds` have passed (a rolled-back transaction never fills its hole). The feed
is pruned of what every process has long applied; a process whose last refresh is
older than half the retention reloads everything instead of trusting the feed.

`match` is called from ingest's worker thread while a refresh may run in the event
loop: a threading lock makes each paper see the engine before or after a delta, never
half of one. This module owns the pruning of `alert_change`.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.errors import QueryError
from bot.matching.engine import MatchEngine
from bot.matching.trial import compile_engine
from bot.store.models import Alert, AlertChange, Topic
from bot.types import Match, PaperRecord

log = logging.getLogger(__name__)

_CHUNK = 500  # ids per IN (...) list
_BIG_DELTA = 2000  # alerts applied in a worker thread rather than on the event loop
_RELOAD_WINDOW = 1000  # seqs below a fresh cursor checked for in-flight writers

TopicRow = tuple[str, str, tuple[str, ...]]  # slug, query, categories


class LiveEngine:
    """A `PaperMatcher` that stays current: call `refresh` before each poll."""

    def __init__(
        self,
        *,
        retention_seconds: float = 7 * 86400,
        hole_seconds: float = 600,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._engine = MatchEngine()
        self._loaded = False
        self._lock = threading.Lock()  # a paper's match vs a delta
        self._refreshing = asyncio.Lock()  # one refresh at a time
        self._cursor = 0  # every change up to here is applied, except the holes
        self._holes: dict[int, float] = {}  # seq -> when first found missing
        self._topics: dict[int, TopicRow] = {}
        self._refreshed = 0.0
        self._history: deque[tuple[float, int]] = deque()  # (when, cursor), for pruning
        self._pruned = 0.0
        self._retention, self._hole_seconds, self._clock = (
            retention_seconds,
            hole_seconds,
            clock,
        )

    def __len__(self) -> int:
        return len(self._engine)

    def match(self, paper: PaperRecord) -> list[Match]:
        with self._lock:
            return self._engine.match(paper)

    async def refresh(self, sessions: async_sessionmaker[AsyncSession]) -> int:
        """Bring the engine up to date with the store; returns how many alerts changed
        (every active one after a full load). Prunes the feed now and then."""
        async with self._refreshing:
            now = self._clock()
            async with sessions() as session:
                if not self._loaded or now - self._refreshed > self._retention / 2:
                    changed = await self._reload(session)
                else:
                    changed = await self._apply_feed(session, now)
                await self._sync_topics(session)
            self._refreshed = now
            self._history.append((now, self._cursor))
            if now - self._pruned > min(3600.0, self._retention / 4):
                await self._prune(sessions, now)
            return changed

    # --- alerts -------------------------------------------------------------------------

    async def _reload(self, session: AsyncSession) -> int:
        # The cursor is read first: a change committed after it is replayed next time,
        # harmlessly, whether or not the snapshot below already saw it.
        top = select(func.coalesce(func.max(col(AlertChange.seq)), 0))
        cursor = int((await session.execute(top)).scalar_one() or 0)
        recent = await session.execute(
            select(col(AlertChange.seq)).where(col(AlertChange.seq) > cursor - _RELOAD_WINDOW)
        )
        present = {int(s or 0) for (s,) in recent}
        rows = await session.execute(
            select(col(Alert.id), col(Alert.query)).where(col(Alert.active).is_(True))
        )
        alerts = [(int(i or 0), q) for i, q in rows]
        topics = await self._read_topics(session)
        listed = [(i, slug, query, list(cats)) for i, (slug, query, cats) in topics.items()]
        engine = await asyncio.to_thread(compile_engine, listed, alerts)
        with self._lock:
            self._engine = engine
        now = self._clock()
        self._cursor, self._loaded, self._topics = cursor, True, topics
        # Numbers missing among the last ones may be writers still in flight.
        low = max(min(present, default=cursor + 1), cursor - _RELOAD_WINDOW + 1)
        self._holes = {seq: now for seq in range(low, cursor + 1) if seq not in present}
        self._history.clear()
        log.info("matching.live_loaded", extra={"alerts": len(alerts), "cursor": cursor})
        return len(alerts)

    async def _apply_feed(self, session: AsyncSession, now: float) -> int:
        holes = [s for s, seen in self._holes.items() if now - seen <= self._hole_seconds]
        self._holes = {s: self._holes[s] for s in holes}
        where = col(AlertChange.seq) > self._cursor
        if holes:
            where = or_(where, col(AlertChange.seq).in_(holes))
        found = await session.execute(
            select(col(AlertChange.seq), col(AlertChange.alert_id)).where(where)
        )
        changed: set[int] = set()
        seen: set[int] = set()
        for seq, alert_id in found:
            seen.add(int(seq or 0))
            changed.add(int(alert_id))
        top = max(seen | {self._cursor})
        for seq in range(self._cursor + 1, top + 1):
            if seq not in seen:
                self._holes[seq] = now
        for seq in seen:
            self._holes.pop(seq, None)
        self._cursor = top
        if changed:
            await self._apply_alerts(session, sorted(changed))
        return len(changed)

    async def _apply_alerts(self, session: AsyncSession, ids: Sequence[int]) -> None:
        current: dict[int, str] = {}
        for start in range(0, len(ids), _CHUNK):
            rows = await session.execute(
                select(col(Alert.id), col(Alert.query)).where(
                    col(Alert.id).in_(ids[start : start + _CHUNK]), col(Alert.active).is_(True)
                )
            )
            current.update((int(i or 0), q) for i, q in rows)
        if len(ids) > _BIG_DELTA:
            await asyncio.to_thread(self._apply, ids, current)
        else:
            self._apply(ids, current)
        log.info("matching.live_applied", extra={"alerts": len(ids), "cursor": self._cursor})

    def _apply(self, ids: Sequence[int], current: dict[int, str]) -> None:
        with self._lock:
            for alert_id in ids:
                query = current.get(alert_id)
                if query is None:
                    self._engine.remove_alert(alert_id)
                    continue
                try:
                    self._engine.add_alert(alert_id, query)
                except QueryError as exc:
                    self._engine.remove_alert(alert_id)
                    log.warning(
                        "matching.bad_alert", extra={"alert_id": alert_id, "error": str(exc)}
                    )

    # --- topics -------------------------------------------------------------------------

    @staticmethod
    async def _read_topics(session: AsyncSession) -> dict[int, TopicRow]:
        rows = await session.execute(
            select(col(Topic.id), col(Topic.slug), col(Topic.query), col(Topic.categories)).where(
                col(Topic.active).is_(True)
            )
        )
        return {int(i or 0): (slug, query, tuple(cats)) for i, slug, query, cats in rows}

    async def _sync_topics(self, session: AsyncSession) -> None:
        wanted = await self._read_topics(session)
        if wanted == self._topics:
            return
        with self._lock:
            for topic_id in self._topics.keys() - wanted.keys():
                self._engine.remove_topic(topic_id)
            for topic_id, row in wanted.items():
                if self._topics.get(topic_id) != row:
                    slug, query, categories = row
                    try:
                        self._engine.add_topic(topic_id, query, categories)
                    except QueryError as exc:
                        self._engine.remove_topic(topic_id)
                        log.warning("matching.bad_topic", extra={"topic": slug, "error": str(exc)})
        self._topics = wanted

    # --- the feed's upkeep --------------------------------------------------------------

    async def _prune(self, sessions: async_sessionmaker[AsyncSession], now: float) -> None:
        """Delete the feed up to the cursor this process held `retention` ago: any
        process that refreshed since then is past it, any other reloads in full."""
        self._pruned = now
        upto = 0
        while self._history and now - self._history[0][0] >= self._retention:
            upto = self._history.popleft()[1]
        if upto <= 0:
            return
        async with sessions() as session, session.begin():
            await session.execute(delete(AlertChange).where(col(AlertChange.seq) <= upto))
