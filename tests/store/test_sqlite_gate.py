"""SQLite writers of one process queue at one gate per file, whatever engine, loop or
thread they write from: none waits in SQLite's busy handler behind another engine."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError, OperationalError

from bot.store.engine import create_engine
from bot.store.sqlite_gate import WriteGate, gate_for


async def test_the_gate_is_first_come_first_served_and_survives_a_cancelled_waiter() -> None:
    gate, order = WriteGate(), []
    await gate.acquire()

    async def writer(name: str) -> None:
        await gate.acquire()
        order.append(name)
        gate.release()

    first = asyncio.create_task(writer("first"))
    await asyncio.sleep(0)
    gone = asyncio.create_task(writer("cancelled"))
    await asyncio.sleep(0)
    last = asyncio.create_task(writer("last"))
    await asyncio.sleep(0)
    gone.cancel()
    gate.release()
    await asyncio.gather(first, last)
    assert order == ["first", "last"]
    assert not gate.held


def test_the_gate_hands_over_across_threads() -> None:
    gate, order = WriteGate(), []
    asyncio.run(gate.acquire())

    def other_thread() -> None:
        async def write() -> None:
            await gate.acquire()
            order.append("other thread")
            gate.release()

        asyncio.run(write())

    thread = threading.Thread(target=other_thread)
    thread.start()
    time.sleep(0.1)  # the other thread is waiting at the gate by now
    order.append("holder")
    gate.release()
    thread.join(5)
    assert order == ["holder", "other thread"]
    assert not gate.held


def test_files_have_gates_and_memory_does_not(tmp_path: Path) -> None:
    assert gate_for(str(tmp_path / "a.db")) is gate_for(str(tmp_path / "." / "a.db"))
    assert gate_for(str(tmp_path / "a.db")) is not gate_for(str(tmp_path / "b.db"))
    assert gate_for(":memory:") is None


def test_two_engines_on_two_loops_write_one_at_a_time(tmp_path: Path) -> None:
    """The command queue's engine (its own thread and loop) and the store's: a write
    transaction of one waits at the gate, not in SQLite's busy handler, until the
    other commits; then it starts at once."""
    url = f"sqlite:///{tmp_path / 'gate.db'}"

    async def setup() -> None:
        engine = create_engine(url)
        async with engine.begin() as conn:
            await conn.execute(text("CREATE TABLE t (who TEXT)"))
        await engine.dispose()

    asyncio.run(setup())
    events: list[str] = []
    holding = threading.Event()
    release = threading.Event()

    def holder() -> None:
        async def run() -> None:
            engine = create_engine(url)
            async with engine.begin() as conn:
                await conn.execute(text("INSERT INTO t VALUES ('holder')"))
                holding.set()
                await asyncio.to_thread(release.wait, 5)
                events.append("holder commits")
            await engine.dispose()

        asyncio.run(run())

    thread = threading.Thread(target=holder)
    thread.start()
    assert holding.wait(5)

    async def second() -> float:
        engine = create_engine(url)
        # SQLite's busy handler would make this write fail fast if it were reached.
        async with engine.connect() as conn:
            await conn.exec_driver_sql("PRAGMA busy_timeout=0")
            await conn.commit()
        waiting = asyncio.get_running_loop().call_later(0.3, release.set)
        async with engine.begin() as conn:
            await conn.execute(text("INSERT INTO t VALUES ('second')"))
            events.append("second writes")
        waiting.cancel()
        async with engine.connect() as conn:
            rows = (await conn.execute(text("SELECT who FROM t ORDER BY rowid"))).all()
        await engine.dispose()
        return len(rows)

    assert asyncio.run(second()) == 2
    thread.join(5)
    assert events == ["holder commits", "second writes"]


@pytest.mark.parametrize("outcome", ["commit", "rollback", "error"])
async def test_every_way_out_of_a_write_lets_the_next_writer_in(
    tmp_path: Path, outcome: str
) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'out.db'}")
    gate = gate_for(str(tmp_path / "out.db"))
    assert gate is not None
    async with engine.begin() as conn:
        await conn.execute(text("CREATE TABLE t (n INTEGER NOT NULL)"))
    assert not gate.held
    with (
        pytest.raises(IntegrityError, match="NOT NULL")
        if outcome == "error"
        else contextlib.nullcontext()
    ):
        async with engine.connect() as conn:
            await conn.execute(text("INSERT INTO t VALUES (1)"))
            assert gate.held
            if outcome == "error":
                await conn.execute(text("INSERT INTO t VALUES (NULL)"))
            await (conn.commit() if outcome == "commit" else conn.rollback())
    assert not gate.held
    await engine.dispose()


async def test_a_writer_waiting_on_another_engine_of_its_process_fails_instead_of_hanging(
    tmp_path: Path,
) -> None:
    """A write transaction that waits for a write on another engine of the same process
    (a bug, but a possible one) gets SQLite's own "database is locked" after the engine's
    busy timeout, as it did before the gate, and the gate stays usable."""
    url = f"sqlite:///{tmp_path / 'wait.db'}"
    holder = create_engine(url)
    other = create_engine(url)
    async with holder.begin() as conn:
        await conn.execute(text("CREATE TABLE t (n INTEGER)"))
    async with holder.connect() as held:
        await held.execute(text("INSERT INTO t VALUES (1)"))
        async with other.connect() as conn:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver.gate_timeout == 30  # the engine's busy timeout
            driver.gate_timeout = 0.3
            started = time.perf_counter()
            with pytest.raises(OperationalError, match="database is locked"):
                await conn.execute(text("INSERT INTO t VALUES (2)"))
            assert time.perf_counter() - started < 5
            await conn.rollback()
        await held.commit()
    async with other.begin() as conn:  # the timed-out waiter left the queue
        await conn.execute(text("INSERT INTO t VALUES (3)"))
    async with holder.connect() as conn:
        rows = (await conn.execute(text("SELECT n FROM t ORDER BY n"))).scalars().all()
    assert rows == [1, 3]
    await holder.dispose()
    await other.dispose()


async def test_a_gate_wait_times_out_and_leaves_the_queue() -> None:
    gate = WriteGate()
    await gate.acquire()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await gate.acquire()
    gate.release()
    assert not gate.held  # nobody was left waiting to hand it to
    async with asyncio.timeout(0.05):
        await gate.acquire()
    gate.release()


async def test_a_whole_transaction_run_in_one_hop_queues_at_the_gate_too(tmp_path: Path) -> None:
    """The one-shot writes (bot/store/oneshot.py) send their own BEGIN IMMEDIATE on the
    driver's thread: they queue at the gate like every writer, instead of waiting in
    SQLite's busy handler (30 s here) behind another engine's transaction."""
    url = f"sqlite:///{tmp_path / 'hop.db'}"
    holder, other = create_engine(url), create_engine(url)
    gate = gate_for(str(tmp_path / "hop.db"))
    assert gate is not None
    async with holder.begin() as conn:
        await conn.execute(text("CREATE TABLE t (n INTEGER)"))

    def write(sqlite_conn: Any, n: int) -> None:
        sqlite_conn.execute("BEGIN IMMEDIATE")
        sqlite_conn.execute("INSERT INTO t VALUES (?)", (n,))
        sqlite_conn.commit()

    async with holder.connect() as held, other.connect() as conn:
        await held.execute(text("INSERT INTO t VALUES (1)"))
        driver = (await conn.get_raw_connection()).driver_connection
        driver.gate_timeout = 0.3
        started = time.perf_counter()
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            await driver.write_with_connection(write, 2)
        assert time.perf_counter() - started < 5  # the gate's wait, not the busy handler's
        await held.commit()
        assert not gate.held
        await driver.write_with_connection(write, 3)
        assert not gate.held  # released after the hop
    async with holder.connect() as conn:
        rows = (await conn.execute(text("SELECT n FROM t ORDER BY n"))).scalars().all()
    assert rows == [1, 3]
    await holder.dispose()
    await other.dispose()
