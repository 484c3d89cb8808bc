"""Engine set-up: papertide picks the driver from a plain database URL.

`sqlite:///subscriptions.db` runs on aiosqlite in WAL mode with a busy timeout;
`postgresql://user@host:5432/db` runs on psycopg 3 (async). Alembic uses the sync
twin of the same driver, once, at start.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from bot.errors import ConfigError
from bot.store import sqlite_hops

log = logging.getLogger(__name__)

T = TypeVar("T")
SQLITE_BUSY_TIMEOUT_MS = 30_000
# Where a prebuilt Core statement may run: an ORM session's transaction, or a bare
# connection's. (The one-click unsubscribe's hot path goes further, straight to the
# driver: bot/store/oneshot.py.)
Executor = AsyncSession | AsyncConnection


def driver_urls(url: str) -> tuple[str, str]:
    """Return (async_url, sync_url) for a user-facing database URL."""
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise ConfigError(
            f"PAPERTIDE_DATABASE_URL is not a database URL: {url!r}",
            variable="PAPERTIDE_DATABASE_URL",
        ) from exc
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return (
            parsed.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False),
            parsed.set(drivername="sqlite").render_as_string(hide_password=False),
        )
    if backend == "postgresql":
        psycopg = parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
        return psycopg, psycopg
    raise ConfigError(
        f"PAPERTIDE_DATABASE_URL must be sqlite:///… or postgresql://…, not {backend}",
        variable="PAPERTIDE_DATABASE_URL",
    )


def is_sqlite(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "sqlite"


def create_engine(
    url: str,
    *,
    read_only: bool = False,
    fixed_pool: int | None = None,
    sqlite_inline: bool = False,
    **kwargs: Any,
) -> AsyncEngine:
    """An AsyncEngine for `url` with papertide's per-backend settings applied.

    `read_only` matters on SQLite only: its transactions begin DEFERRED and may not write,
    so page views read a WAL snapshot without queueing behind writers for the lock.
    `fixed_pool` keeps that many connections and never opens more: callers beyond it
    wait in the pool's queue (asyncio, first come first served).
    `sqlite_inline` too: statements run on the loop's own thread (`InlineConnection`),
    for an engine whose loop does little else (the command queue's).
    """
    async_url, _ = driver_urls(url)
    in_memory = ":memory:" in async_url or "mode=memory" in async_url
    if fixed_pool is not None and not in_memory:
        kwargs.update(pool_size=fixed_pool, max_overflow=0)
    if async_url.startswith("sqlite"):
        if not read_only and not in_memory:
            # One writer per process. Every write transaction holds SQLite's one write
            # lock from BEGIN IMMEDIATE to commit, so a second connection could only wait
            # in SQLite's busy handler, which polls with sleeps of up to 100 ms: under 50
            # concurrent requests that, not the work, made the p99. One pooled connection
            # makes writers queue in the pool instead (asyncio, first come first served)
            # and wake the moment the previous commit lands.
            kwargs.setdefault("pool_size", 1)
            kwargs.setdefault("max_overflow", 0)
            kwargs.setdefault("pool_timeout", SQLITE_BUSY_TIMEOUT_MS / 1000)
        # Connections come back after their commit or rollback; the pool's own reset
        # would roll back once more, a hop to the connection's thread for nothing.
        # `_reset_sqlite` below rolls back only a connection still in a transaction.
        kwargs.setdefault("pool_reset_on_return", None)
        engine = create_async_engine(
            async_url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs
        )
        _configure_sqlite(engine, read_only=read_only, inline=sqlite_inline)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    kwargs.setdefault("pool_size", 10)
    return create_async_engine(async_url, **kwargs)


def _configure_sqlite(engine: AsyncEngine, *, read_only: bool, inline: bool) -> None:
    creator = sqlite_hops.connect_inline if inline else sqlite_hops.connect

    @event.listens_for(engine.sync_engine, "do_connect")
    def _few_hops(dialect: Any, _record: Any, cargs: Any, cparams: Any) -> Any:
        # aiosqlite's connection, with cursors that take one thread hop per statement
        # (or none, inline).
        return dialect.dbapi.connect(*cargs, async_creator_fn=creator, **cparams)

    @event.listens_for(engine.sync_engine, "reset")
    def _reset_sqlite(dbapi_connection: Any, record: Any, state: Any) -> None:
        driver = record.driver_connection
        if state.asyncio_safe and (driver is None or driver.in_transaction):
            dbapi_connection.rollback()

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let us issue BEGIN ourselves (below) instead of pysqlite's deferred BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        if read_only:
            cursor.execute("PRAGMA query_only=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(conn: Any) -> None:
        if conn.get_execution_options().get(_SINGLE_STATEMENTS):
            return  # see `single_statements`
        # IMMEDIATE takes the write lock up front, so two processes never deadlock
        # upgrading read locks: the busy timeout applies and nobody sees "database is locked".
        conn.exec_driver_sql("BEGIN" if read_only else "BEGIN IMMEDIATE")


# An execution option of papertide's own (see `single_statements`).
_SINGLE_STATEMENTS = "papertide_single_statements"


def single_statements(engine: AsyncEngine) -> AsyncEngine:
    """`engine` for connections that each run one read-only statement outside any
    transaction: a statement reads one snapshot by itself on either database, so the
    BEGIN and ROLLBACK around it bought nothing but a thread hop (SQLite) or two round
    trips (PostgreSQL)."""
    if is_sqlite(engine):
        return engine.execution_options(**{_SINGLE_STATEMENTS: True})
    return engine.execution_options(isolation_level="AUTOCOMMIT")


async def once_more_if_disconnected(transaction: Callable[[], Awaitable[T]]) -> T:
    """Run `transaction` (a whole one: it opens, commits and closes its own session);
    once more if the database dropped its connection (a restart, a failover, an idle
    connection killed).

    For engines without `pool_pre_ping`, which would otherwise pay a round trip per
    checkout to find a dead connection before it is used: SQLAlchemy discards the
    pool's connections when it sees the disconnect, so the second run gets a fresh
    one. Only for work that may run twice: it rolled back, unless the connection died
    during its COMMIT (then a claim in the same transaction, as commands make, turns
    the second run away)."""
    try:
        return await transaction()
    except DBAPIError as exc:
        if not exc.connection_invalidated:
            raise
        log.warning("store.reconnect", extra={"error": type(exc.orig).__name__})
        return await transaction()


def session_factory(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False)
