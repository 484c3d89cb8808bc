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


@dataclass(frozen=True, slots=True)
class Store:
    """One database: read-write sessions, and sessions for pure reads."""

    url: str
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    # On SQLite, reads get their own engine that begins DEFERRED (a WAL snapshot) and
    # never queues for the write lock; PostgreSQL's MVCC needs no such split.
    read_sessions: async_sessionmaker[AsyncSession]

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name


@asynccontextmanager
async def open_store(url: str, *, migrate: bool = True) -> AsyncIterator[Store]:
    """Open the store at `url` (migrating it first) and close it at exit."""
    if migrate:
        await upgrade(url)
    engine = create_engine(url)
    reader = create_engine(url, read_only=True) if is_sqlite(engine) else None
    try:
        yield Store(
            url=url,
            engine=engine,
            sessions=session_factory(engine),
            read_sessions=session_factory(reader or engine),
        )
    finally:
        if reader is not None:
            await reader.dispose()
        await engine.dispose()
