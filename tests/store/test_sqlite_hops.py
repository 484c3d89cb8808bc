"""SQLite's cursors take one hop to the connection's thread per statement, stream big
results in bounded chunks, and a connection never goes back to the pool in a transaction."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store import sqlite_hops
from bot.store.engine import create_engine, single_statements


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite:///{tmp_path / 'hops.db'}")
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE n (i INTEGER PRIMARY KEY)"))
        await conn.execute(text("INSERT INTO n (i) VALUES (:i)"), [{"i": i} for i in range(1000)])
    yield engine
    await engine.dispose()


@pytest.fixture
def hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of every function sent to a connection's worker thread."""
    sent: list[str] = []
    original = sqlite_hops.FewHopsConnection._execute

    async def counted(self: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(sqlite_hops.FewHopsConnection, "_execute", counted)
    return sent


async def test_a_statement_and_its_rows_take_one_hop(engine: AsyncEngine, hops: list[str]) -> None:
    async with engine.connect() as conn:  # connect first: the pool's hops are not counted
        hops.clear()
        rows = (await conn.execute(text("SELECT i FROM n WHERE i < 30 ORDER BY i"))).all()
        assert [r.i for r in rows] == list(range(30))
        assert hops == ["_run"]  # BEGIN IMMEDIATE, the SELECT and its rows
        hops.clear()
        result = await conn.execute(text("UPDATE n SET i = i + 5000 WHERE i < 3"))
        assert result.rowcount == 3
        assert hops == ["_run"]
        await conn.rollback()


async def test_big_results_stream_in_bounded_chunks(engine: AsyncEngine, hops: list[str]) -> None:
    async with engine.connect() as conn:
        hops.clear()
        result = await conn.stream(text("SELECT i FROM n ORDER BY i"))
        seen = [row.i async for row in result]
    assert seen == list(range(1000))
    # The first chunk came with the statement; the rest in chunks, never all at once.
    assert hops[0] == "_run"
    assert "_more" in hops
    assert len(hops) >= 1000 // sqlite_hops.PREFETCH


async def test_fetchmany_and_fetchone_read_past_the_first_chunk(engine: AsyncEngine) -> None:
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        cursor = raw.driver_connection.cursor()
        await cursor.execute("SELECT i FROM n ORDER BY i")
        first = await cursor.fetchmany(sqlite_hops.PREFETCH + 10)
        one = await cursor.fetchone()
        rest = await cursor.fetchall()
        await cursor.close()
    assert [r[0] for r in first] == list(range(sqlite_hops.PREFETCH + 10))
    assert one[0] == sqlite_hops.PREFETCH + 10
    assert [r[0] for r in rest] == list(range(sqlite_hops.PREFETCH + 11, 1000))


async def test_a_connection_returned_in_a_transaction_is_rolled_back(
    engine: AsyncEngine, hops: list[str]
) -> None:
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        driver = raw.driver_connection
        cursor = driver.cursor()
        await cursor.execute("BEGIN IMMEDIATE")
        await cursor.execute("DELETE FROM n")
        assert driver.in_transaction
    # Back in the pool: the write is gone and the lock is free for the next writer.
    async with engine.begin() as conn:
        count = (await conn.execute(text("SELECT count(*) FROM n"))).scalar_one()
    assert count == 1000
    hops.clear()
    async with engine.begin() as conn:
        await conn.execute(text("SELECT 1"))
    # BEGIN with the statement, COMMIT: no extra rollback once the transaction has ended.
    assert hops == ["_run", "commit"]


async def test_a_begin_rides_with_the_first_statement(engine: AsyncEngine, hops: list[str]) -> None:
    async with engine.connect() as conn:
        hops.clear()
        await conn.begin()
        assert hops == []  # BEGIN IMMEDIATE waits for the transaction's first statement
        raw = await conn.get_raw_connection()
        assert raw.driver_connection.in_transaction
        await conn.rollback()
        assert hops == []  # nothing ran: nothing to roll back
        await conn.begin()
        await conn.execute(text("DELETE FROM n WHERE i < 10"))
        await conn.commit()
        assert hops == ["_run", "commit"]
    async with engine.connect() as conn:
        assert (await conn.execute(text("SELECT count(*) FROM n"))).scalar_one() == 990


async def test_a_single_statement_read_takes_one_hop_and_leaves_no_transaction(
    engine: AsyncEngine, hops: list[str]
) -> None:
    """`single_statements`: no BEGIN, and no ROLLBACK hop after the statement."""
    reads = single_statements(create_engine(engine.url.render_as_string(), read_only=True))
    try:
        async with reads.connect() as conn:
            hops.clear()
            rows = (await conn.exec_driver_sql("SELECT count(*) FROM n")).all()
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            assert not driver.in_transaction  # its own snapshot ended with the statement
        assert rows == [(1000,)]
        assert hops == ["_run"]
    finally:
        await reads.dispose()


async def test_an_inline_engine_runs_statements_on_the_loops_own_thread(tmp_path: Path) -> None:
    """The command queue's engine: no worker thread, no hop, same results and rollbacks."""
    engine = create_engine(f"sqlite:///{tmp_path / 'inline.db'}", sqlite_inline=True)
    before = threading.active_count()
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE n (i INTEGER PRIMARY KEY)"))
        await conn.execute(text("INSERT INTO n (i) VALUES (:i)"), [{"i": i} for i in range(300)])
    async with engine.begin() as conn:
        await conn.execute(text("INSERT INTO n (i) VALUES (1000)"))
        with pytest.raises(IntegrityError):
            await conn.execute(text("INSERT INTO n (i) VALUES (1)"))
        await conn.rollback()
    async with engine.connect() as conn:
        raw = await conn.get_raw_connection()
        assert not raw.driver_connection._thread.is_alive()
        rows = (await conn.execute(text("SELECT i FROM n ORDER BY i"))).scalars().all()
    assert rows == list(range(300))  # the failed transaction left nothing
    assert threading.active_count() == before
    await engine.dispose()
