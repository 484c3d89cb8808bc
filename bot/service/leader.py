"""Leadership: on PostgreSQL only one process runs the poll and digest jobs.

The leader holds a session-level advisory lock on a dedicated connection for as long
as it lives; PostgreSQL releases the lock when that connection dies (crash, SIGKILL,
network loss), and a standby, retrying every `retry_seconds`, takes over. On SQLite
there is one process, and it leads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.timeutil import utcnow

log = logging.getLogger(__name__)

# 'ptsched' as a bigint: advisory locks are per database, so one key serves every install.
LOCK_KEY = int.from_bytes(b"ptsched", "big")
RETRY_SECONDS = 15.0


class Leadership:
    """Tracks whether this process leads; `run` keeps trying to (or keeps holding) the lock."""

    def __init__(
        self, engine: AsyncEngine, *, retry_seconds: float = RETRY_SECONDS, key: int = LOCK_KEY
    ) -> None:
        self._engine = engine
        self._retry = retry_seconds
        self._key = key
        self._conn: AsyncConnection | None = None
        self._other_leads = False
        self._checked_at: datetime | None = None
        self._since: datetime | None = None
        self.is_leader = engine.dialect.name == "sqlite"

    def leader_known(self) -> bool:
        """True when this process leads or the last check saw another process holding the lock."""
        return self.is_leader or self._other_leads

    def state(self) -> dict[str, Any]:
        """For /healthz: role, since when, when the lock was last checked."""
        role = "leader" if self.is_leader else ("standby" if self._other_leads else "unknown")
        return {
            "role": role,
            "leader_known": self.leader_known(),
            "since": self._since.isoformat() if self._since else None,
            "checked_at": self._checked_at.isoformat() if self._checked_at else None,
        }

    async def run(self, stop: asyncio.Event) -> None:
        """Hold or seek the lock until `stop`; then release it."""
        if self._engine.dialect.name != "postgresql":
            self._since = utcnow()
            await stop.wait()
            return
        try:
            while not stop.is_set():
                try:
                    await self._check()
                except Exception as exc:
                    await self._lose(f"{type(exc).__name__}: {exc}")
                self._checked_at = utcnow()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self._retry)
        finally:
            await self._release()

    async def _check(self) -> None:
        if self._conn is not None:
            # Heartbeat: a dead connection means the lock is gone; stop leading now.
            await self._conn.execute(text("SELECT 1"))
            await self._conn.commit()
            return
        conn = await self._engine.connect()
        try:
            got = bool(await conn.scalar(text("SELECT pg_try_advisory_lock(:k)"), {"k": self._key}))
            if not got:
                held = await conn.scalar(
                    text(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"
                        " AND database = (SELECT oid FROM pg_database"
                        " WHERE datname = current_database())"
                        " AND classid = :hi AND objid = :lo AND objsubid = 1"
                    ),
                    {"hi": self._key >> 32, "lo": self._key & 0xFFFFFFFF},
                )
                self._other_leads = bool(held)
            await conn.commit()
        except BaseException:
            await conn.close()
            raise
        if not got:
            await conn.close()
            return
        self._conn = conn
        self.is_leader = True
        self._other_leads = False
        self._since = utcnow()
        log.info("leader.acquired", extra={"key": self._key})

    async def _lose(self, reason: str) -> None:
        if self.is_leader:
            log.warning("leader.lost", extra={"reason": reason})
        self.is_leader = False
        self._other_leads = False
        self._since = None
        conn, self._conn = self._conn, None
        if conn is not None:
            # The connection is broken or unknown; invalidate it rather than reuse it.
            await _discard(conn)

    async def _release(self) -> None:
        conn, self._conn = self._conn, None
        self.is_leader = False
        if conn is None:
            return
        with contextlib.suppress(Exception):
            await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": self._key})
            await conn.commit()
        await _discard(conn)
        log.info("leader.released", extra={"key": self._key})


async def _discard(conn: AsyncConnection) -> None:
    with contextlib.suppress(Exception):
        await conn.invalidate()
    with contextlib.suppress(Exception):
        await conn.close()
