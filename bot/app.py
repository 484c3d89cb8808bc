"""The composition root: builds settings, engine and the rest, and runs them.

Everything papertide runs is wired here and nowhere else; modules receive what
they need as arguments.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.config import Settings
from bot.store.engine import create_engine, session_factory
from bot.store.migrate import upgrade


@dataclass
class AppContext:
    settings: Settings
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]


@asynccontextmanager
async def open_app(settings: Settings, *, migrate: bool = True) -> AsyncIterator[AppContext]:
    """Open the store (migrating it first) and yield the wired context."""
    if migrate:
        await upgrade(settings.database_url)
    engine = create_engine(settings.database_url)
    try:
        yield AppContext(settings=settings, engine=engine, sessions=session_factory(engine))
    finally:
        await engine.dispose()
