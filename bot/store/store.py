"""The `Store`: the engine, its sessions and the read-only sessions public pages use.

`open_store` migrates (unless told not to), opens the engine(s) and disposes of them
at exit. Lower layers receive `store.sessions` (or one `AsyncSession`), never the
composition root.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.store.engine import create_engine, is_sqlite, session_factory
from bot.store.migrate import upgrade
from bot.store.oneshot import OneShot

# The one-shot writes' own PostgreSQL pool: each holds a connection for one round trip.
ONE_SHOT_POOL = 5


@dataclass(frozen=True, slots=True)
class Store:
    """One database: read-write sessions, and sessions for pure reads."""

    url: str
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    # On SQLite, reads get their own engine that begins DEFERRED (a WAL snapshot) and
    # never queues for the write lock; PostgreSQL's MVCC needs no such split.
    read_sessions: async_sessionmaker[AsyncSession]
    # Short reads of the busiest public pages (a topic page, its feed), outside any
    # transaction on PostgreSQL; on SQLite the same as `read_sessions`.
    quick_reads: async_sessionmaker[AsyncSession]
    # Writes that are one statement committing itself (bot.store.oneshot): the one-click
    # unsubscribe. PostgreSQL: an AUTOCOMMIT pool without pre-ping; SQLite: `engine`.
    one_shot: OneShot

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name


@asynccontextmanager
async def open_store(url: str, *, migrate: bool = True) -> AsyncIterator[Store]:
    """Open the store at `url` (migrating it first) and close it at exit."""
    if migrate:
        await upgrade(url)
    engine = create_engine(url)
    reader = None
    if is_sqlite(engine):
        reader = create_engine(url, read_only=True)
        # A deferred BEGIN reads one WAL snapshot: the page's reads agree with each other.
        quick_sessions = session_factory(reader)
    else:
        # Under READ COMMITTED every statement reads its own snapshot anyway: BEGIN and
        # ROLLBACK around a page's reads were two round trips that bought nothing.
        quick_sessions = session_factory(engine.execution_options(isolation_level="AUTOCOMMIT"))
    autocommit = None
    if not is_sqlite(engine):
        autocommit = create_engine(
            url,
            isolation_level="AUTOCOMMIT",
            pool_pre_ping=False,
            # No transaction is ever left open on it: the pool's rollback would be work
            # for nothing on every return.
            pool_reset_on_return=None,
            pool_size=ONE_SHOT_POOL,
            max_overflow=0,
        )
    one_shot = OneShot(engine, autocommit)
    try:
        yield Store(
            url=url,
            engine=engine,
            sessions=session_factory(engine),
            read_sessions=session_factory(reader or engine),
            quick_reads=quick_sessions,
            one_shot=one_shot,
        )
    finally:
        await one_shot.dispose()
        if reader is not None:
            await reader.dispose()
        await engine.dispose()
