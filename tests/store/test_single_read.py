"""`Store.single_read`: the page reads' pool skips the pre-ping, so a connection the server
dropped must cost the read nothing but a second try (PostgreSQL: a restart, a terminated
backend)."""

from __future__ import annotations

import psycopg
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.store import open_store
from tests.conftest import _admin_conninfo


async def _backend(conn: AsyncConnection) -> int:
    return int((await conn.exec_driver_sql("SELECT pg_backend_pid()")).scalar_one())


async def test_a_read_runs_again_on_a_fresh_connection_when_the_server_dropped_its_own(
    pg_url: str,
) -> None:
    async with open_store(pg_url, migrate=False) as store:
        first = await store.single_read(_backend)
        assert await store.single_read(_backend) == first  # the pool's one connection, kept
        with psycopg.connect(_admin_conninfo(pg_url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first,))
        again = await store.single_read(_backend)
    assert again != first
