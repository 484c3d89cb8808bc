"""The `Store`: the engine, its sessions, and the read-only sessions and connections public
pages use.

`open_store` migrates (unless told not to), opens the engine(s) and disposes of them
at exit. Lower layers receive `store.sessions` (or one `AsyncSession`), never the
composition root.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker

from bot.store.engine import (
    create_engine,
    is_sqlite,
    once_more_if_disconnected,
    session_factory,
    single_statements,
)
from bot.store.migrate import upgrade
from bot.store.oneshot import OneShot

# The one-shot writes' own PostgreSQL pool: each holds a connection for one round trip.
ONE_SHOT_POOL = 5

_T = TypeVar("_T")
# Connections of `single_reads`, by backend. A read holds its connection until the loop
# takes its result, a loop turn under load; measured at 50 concurrent topic views:
# on SQLite (a connection's statement is a hop through its thread) 8 connections left
# views queueing for them (p99 ~0.5 s), 16 did not (~0.28 s) and 32 gained nothing; on
# PostgreSQL, whose server processes share the machine's cores, 8 served ~1.6x the
# views per second of 16.
SINGLE_READ_CONNECTIONS = {"sqlite": 16, "postgresql": 8}


@dataclass(frozen=True, slots=True)
class Store:
    """One database: read-write sessions, and sessions for pure reads."""

    url: str
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    # On SQLite, reads get their own engine that begins DEFERRED (a WAL snapshot) and
    # never queues for the write lock; PostgreSQL's MVCC needs no such split.
    read_sessions: async_sessionmaker[AsyncSession]
    # The busiest public pages (a topic page, its feed) read with one statement each,
    # straight through the driver on a bare connection, outside any transaction
    # (`bot.store.engine.single_statements`), from a small pool of their own: see
    # `single_read`.
    single_reads: AsyncEngine
    single_gate: asyncio.Semaphore  # as many as `single_reads` has connections
    # Writes that are one statement committing itself (bot.store.oneshot): the one-click
    # unsubscribe. PostgreSQL: an AUTOCOMMIT pool without pre-ping; SQLite: `engine`.
    one_shot: OneShot

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    async def single_read(self, read: Callable[[AsyncConnection], Awaitable[_T]]) -> _T:
        """`read(conn)` (one read-only statement) on a `single_reads` connection.

        That pool skips the pre-ping, a round trip before every statement that cost
        about as much CPU as the page's own statement; instead a connection the server
        dropped (a restart) fails its statement, SQLAlchemy invalidates the pool, and the
        read runs once more on a fresh connection: a read can always run again.
        """
        # Readers queue here, first come first served, never in the pool: its checkout
        # lets a newcomer take a connection just returned ahead of those waiting, and
        # under 50 concurrent views the unlucky ones waited a page's time many times over.
        async with self.single_gate:
            return await once_more_if_disconnected(lambda: self._read_once(read))

    async def _read_once(self, read: Callable[[AsyncConnection], Awaitable[_T]]) -> _T:
        async with self.single_reads.connect() as conn:
            return await read(conn)


@asynccontextmanager
async def open_store(url: str, *, migrate: bool = True) -> AsyncIterator[Store]:
    """Open the store at `url` (migrating it first) and close it at exit."""
    if migrate:
        await upgrade(url)
    engine = create_engine(url)
    reader = create_engine(url, read_only=True) if is_sqlite(engine) else None
    # Its own fixed pool: with overflow, 50 concurrent views opened connections beyond
    # the pool (a thread each on SQLite, a server process on PostgreSQL) and closed them
    # again at their return, and that churn cost more than the pages' statements.
    size = SINGLE_READ_CONNECTIONS[engine.dialect.name]
    single = create_engine(url, read_only=True, fixed_pool=size, pool_pre_ping=False)
    autocommit = None
    if not is_sqlite(engine):
        autocommit = create_engine(
            url,
            isolation_level="AUTOCOMMIT",
            pool_pre_ping=False,
            # No transaction is ever left open on it: the pool's rollback would be work
            # for nothing on every return.
            pool_reset_on_return=None,
            fixed_pool=ONE_SHOT_POOL,
        )
    one_shot = OneShot(engine, autocommit)
    try:
        yield Store(
            url=url,
            engine=engine,
            sessions=session_factory(engine),
            read_sessions=session_factory(reader or engine),
            single_reads=single_statements(single),
            single_gate=asyncio.Semaphore(size),
            one_shot=one_shot,
        )
    finally:
        await one_shot.dispose()
        await single.dispose()
        if reader is not None:
            await reader.dispose()
        await engine.dispose()
