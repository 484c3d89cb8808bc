"""Shared fixtures: real SQLite files and a real PostgreSQL database per test session.

PostgreSQL comes from PAPERTIDE_TEST_POSTGRES_URL (`make test` sets it to the local
server). Without a reachable server the PostgreSQL tests fail; they never skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlmodel import SQLModel

from bot.chat.queue import CommandWork
from bot.config import Settings
from bot.service.chat_deps import build_command_work
from bot.store.engine import create_engine, session_factory
from bot.store.migrate import upgrade_sync

DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


def _admin_conninfo(url: str) -> str:
    parsed = make_url(url)
    return parsed.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture(scope="session")
def pg_server_url() -> str:
    url = os.environ.get("PAPERTIDE_TEST_POSTGRES_URL", DEFAULT_PG)
    try:
        with psycopg.connect(_admin_conninfo(url), connect_timeout=5):
            pass
    except psycopg.OperationalError as exc:
        pytest.fail(f"PostgreSQL is required at {url} (PAPERTIDE_TEST_POSTGRES_URL): {exc}")
    return url


@pytest.fixture(scope="session")
def pg_database(pg_server_url: str) -> Iterator[str]:
    """A fresh, migrated database for this test session, dropped at the end."""
    name = f"papertide_t_{uuid.uuid4().hex[:10]}"
    admin = _admin_conninfo(pg_server_url)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    upgrade_sync(url)
    yield url
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _truncate_all(url: str) -> None:
    tables = ", ".join(f'"{t.name}"' for t in SQLModel.metadata.sorted_tables)
    with psycopg.connect(_admin_conninfo(url), autocommit=True) as conn:
        conn.execute(f"TRUNCATE {tables} RESTART IDENTITY CASCADE")


@pytest.fixture
def own_pg_database(pg_server_url: str) -> Iterator[str]:
    """A database made for this test alone (the workers are other processes), always dropped."""
    name = f"papertide_mp_{uuid.uuid4().hex[:10]}"
    admin = make_url(pg_server_url).set(drivername="postgresql").render_as_string(False)
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = make_url(pg_server_url).set(database=name).render_as_string(hide_password=False)
    try:
        upgrade_sync(url)
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'subscriptions.db'}"
    upgrade_sync(url)
    return url


@pytest.fixture
def pg_url(pg_database: str) -> str:
    _truncate_all(pg_database)
    return pg_database


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> str:
    """A migrated, empty store; every test using it runs on SQLite and on PostgreSQL."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pg_url"
    return str(request.getfixturevalue(fixture))


@pytest.fixture
async def engine(db_url: str) -> AsyncIterator[AsyncEngine]:
    eng = create_engine(db_url)
    yield eng
    await eng.dispose()


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return session_factory(engine)


@pytest.fixture
async def command_work(db_url: str) -> AsyncIterator[CommandWork]:
    """The chat apps' command queue, on its own thread with its own engine (as `serve`
    builds it), drained and stopped at the end of the test."""
    work = build_command_work(db_url)
    yield work
    await work.queue.close()


@pytest.fixture
def settings(db_url: str, tmp_path: Path) -> Settings:
    """Settings for a test: its own store, no network defaults reachable by accident."""
    return Settings(
        database_url=db_url,
        sources=["sample"],
        arxiv_api_url="http://127.0.0.1:9/api/query",
        arxiv_rss_url="http://127.0.0.1:9/rss/",
        arxiv_delay_seconds=0.0,
        console_out=str(tmp_path / "console.out"),
    )


async def count_rows(sessions: async_sessionmaker[AsyncSession], table: str) -> int:
    async with sessions() as session:
        return int((await session.execute(text(f"SELECT count(*) FROM {table}"))).scalar_one())
