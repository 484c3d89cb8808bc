"""Writes that commit with their own statement: no BEGIN, no COMMIT, no pre-ping round trip.

For the hottest writes (the one-click unsubscribe, clicked in bursts after a send) the
transaction's bookkeeping cost more than the change. `OneShot.run` takes SQLAlchemy Core
statements (their owners build them), compiles them once per dialect to the driver's own
SQL and runs that straight through the driver (`exec_driver_sql`, as
bot/ingest/paperrows.py does), so values go in as the driver takes them (`driver_time`).

Writes that arrive while others are under way go together in the next batch (group
commit): at most one batch per connection at a time, the queue first come first served.
Measured under 50 concurrent clicks, one write per connection at a time spent its time
waiting (the pool's queue lets a newcomer take a connection a woken waiter was promised,
and the event loop is slow to hand a connection on under load: a SQLite hop took 0.2 ms,
the wait for one up to 300 ms), and every write paid its own commit and round trip.

- PostgreSQL: exactly one statement per batch (data-modifying CTEs make a whole change
  one statement; the writes' own values bound as arrays), on an AUTOCOMMIT engine of its
  own whose pool does not pre-ping: one round trip, one commit. A statement that fails
  because its connection was dead (the database restarted) runs once more: SQLAlchemy
  invalidated the whole pool on that error, so the retry connects afresh. That is the
  robustness the pre-ping bought, paid on a failure instead of on every checkout.
  So does one that PostgreSQL undid to break a deadlock (two batches that share rows may
  lock them in opposite orders). Retrying is safe because the statement is its own
  transaction: it either committed or never happened, and its callers' writes are
  conditional (a second run of a committed change matches nothing).
- SQLite: no data-modifying CTEs and one statement per `execute`, so each write's
  statements run in order, with its parameters, in a SAVEPOINT of its own (one failing
  is rolled back alone and told so), the whole batch in ONE hop to the write
  connection's thread (bot/store/sqlite_hops.py) between BEGIN IMMEDIATE and COMMIT.

Either way `run` returns the write's rows of every statement, committed.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any

from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine
from sqlalchemy.pool import QueuePool
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from bot.store.columns import sqlite_time
from bot.store.sqlite_hops import FewHopsConnection
from bot.timeutil import as_utc

# Named parameters (`:name`) for sqlite3, so one dict serves every statement of a run.
_SQLITE_NAMED = sqlite.dialect(paramstyle="named")

Rows = list[tuple[Any, ...]]
_DEADLOCK = "40P01"  # PostgreSQL's SQLSTATE deadlock_detected


@dataclass(frozen=True, slots=True)
class DriverStatement:
    """A Core statement as its driver takes it: the SQL, and the values of the constants
    the statement carries (`IN ('pending', 'held')` becomes two named parameters)."""

    sql: str
    constants: dict[str, Any]


def compile_for_driver(statement: ClauseElement, dialect: Dialect) -> DriverStatement:
    """`statement` compiled once for `dialect`'s driver, its open parameters left to bind."""
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    open_names = {name for bind, name in compiled.bind_names.items() if bind.required}
    # Expanding IN lists are rendered here, once, with the constants they hold.
    expanded = compiled.construct_expanded_state(dict.fromkeys(open_names))
    assert isinstance(expanded.parameters, dict)
    constants = {
        name: value.value if isinstance(value, Enum) else value
        for name, value in expanded.parameters.items()
        if name not in open_names
    }
    return DriverStatement(expanded.statement, constants)


# At most this many writes in one hop: a bounded hop keeps the next batch's wait bounded.
MAX_BATCH = 64


@dataclass(slots=True)
class _Queued:
    """A write waiting for the next batch, and where its result goes."""

    statements: tuple[DriverStatement, ...]
    params: dict[str, Any]
    per_write: tuple[str, ...]
    done: asyncio.Future[list[Rows]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def _run_sqlite(
    conn: sqlite3.Connection, batch: Sequence[tuple[tuple[DriverStatement, ...], dict[str, Any]]]
) -> list[list[Rows] | sqlite3.Error]:
    """On the write connection's thread: the writes of `batch` as one transaction, each in
    its own savepoint; each write's rows, or the error that undid it alone."""
    out: list[list[Rows] | sqlite3.Error] = []
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statements, params in batch:
            conn.execute("SAVEPOINT one_shot")
            try:
                out.append(
                    [conn.execute(s.sql, s.constants | params).fetchall() for s in statements]
                )
            except sqlite3.Error as exc:
                conn.execute("ROLLBACK TO one_shot")
                out.append(exc)
            conn.execute("RELEASE one_shot")
        conn.commit()
    except BaseException:
        if conn.in_transaction:
            conn.rollback()
        raise
    return out


def _deadlocked(exc: DBAPIError) -> bool:
    """PostgreSQL broke a deadlock by undoing this statement: two batches that share two
    rows may lock them in opposite orders. The statement was undone whole; run it again."""
    return getattr(exc.orig, "sqlstate", None) == _DEADLOCK


class _Held:
    """A PostgreSQL writer's connection, kept while writes keep coming: taking one from
    the pool and giving it back cost the event loop a turn each, per batch."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._conn: AsyncConnection | None = None

    async def connection(self) -> AsyncConnection:
        if self._conn is None:
            self._conn = await self._engine.connect()
        return self._conn

    async def drop(self) -> None:
        """Give the connection back (an invalidated one is discarded by the pool)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()


class OneShot:
    """Runs a few Core statements as one self-committing write (see the module's doc)."""

    def __init__(self, engine: AsyncEngine, autocommit: AsyncEngine | None = None) -> None:
        """`engine`: the store's write engine. `autocommit`: PostgreSQL only, an engine in
        AUTOCOMMIT without pre-ping (`open_store` builds it)."""
        self.dialect = engine.dialect.name
        if self.dialect == "postgresql" and autocommit is None:
            raise ValueError("PostgreSQL one-shot writes need their AUTOCOMMIT engine")
        self._engine = autocommit or engine
        self._compiled: dict[tuple[ClauseElement, ...], tuple[DriverStatement, ...]] = {}
        self._queued: list[_Queued] = []  # writes for the next batch
        self._writers: set[asyncio.Task[None]] = set()  # the tasks running batches
        # One batch per connection at a time: SQLite's one writer, PostgreSQL's pool.
        pool = self._engine.pool
        self._max_writers = pool.size() if isinstance(pool, QueuePool) else 1

    @property
    def engine(self) -> AsyncEngine:
        """The engine the writes run on (PostgreSQL's AUTOCOMMIT one; SQLite's writer)."""
        return self._engine

    def driver_time(self, when: datetime) -> Any:
        """A time as the driver takes it for a `UTCDateTime` column."""
        return sqlite_time(when) if self.dialect == "sqlite" else as_utc(when)

    def _for_driver(self, statements: tuple[ClauseElement, ...]) -> tuple[DriverStatement, ...]:
        compiled = self._compiled.get(statements)
        if compiled is None:
            dialect = _SQLITE_NAMED if self.dialect == "sqlite" else self._engine.dialect
            compiled = tuple(compile_for_driver(s, dialect) for s in statements)
            self._compiled[statements] = compiled
        return compiled

    async def run(
        self,
        statements: tuple[ClauseElement, ...],
        params: dict[str, Any],
        *,
        per_write: tuple[str, ...] = (),
    ) -> list[Rows]:
        """Run `statements` (module-level constants: compiled on first use) with `params`
        as a committed write; every statement's rows, in order.

        On PostgreSQL the one statement runs for a batch of writes: each `per_write`
        parameter is bound as an array of the batch's values, beside `ordinal` (0, 1, …),
        and every row the statement returns starts with the ordinal of the write it
        belongs to (stripped here). The other parameters are the batch's: the last
        write's, so they must be the same for every write but a time, which becomes the
        batch's latest."""
        queued = _Queued(self._for_driver(statements), params, per_write)
        if self.dialect == "postgresql" and len(queued.statements) != 1:
            raise ValueError("on PostgreSQL a one-shot write is one statement")
        self._queued.append(queued)
        if len(self._writers) < self._max_writers:
            self._writers.add(asyncio.create_task(self._write_queued()))
        # Shielded: a caller that stops waiting leaves its write to the batch it is in.
        return await asyncio.shield(queued.done)

    def _next_batch(self) -> list[_Queued]:
        first = self._queued[0].statements
        batch = [q for q in self._queued if q.statements is first][:MAX_BATCH]
        taken = {id(q) for q in batch}
        self._queued = [q for q in self._queued if id(q) not in taken]
        return batch

    async def _write_queued(self) -> None:
        """Batch after batch until no write is waiting; every write's future is settled."""
        held = _Held(self._engine)
        try:
            while self._queued:
                await self._write_batches(held)
                await held.drop()  # may take a loop turn: writes queued meanwhile go next
        finally:
            # At once, with no await between the last look at the queue and this: a write
            # queued later finds a free place and starts a writer.
            current = asyncio.current_task()
            assert current is not None
            self._writers.discard(current)

    async def _write_batches(self, held: _Held) -> None:
        while self._queued:
            batch = self._next_batch()
            results: Sequence[list[Rows] | sqlite3.Error]
            try:
                if self.dialect == "sqlite":
                    results = await self._run_sqlite(batch)
                else:
                    results = await self._run_postgresql(batch, held)
            except BaseException as exc:  # nothing of the batch was committed: all are told
                stopping = not isinstance(exc, Exception)  # cancelled at shutdown
                for queued in batch + (self._queued if stopping else []):
                    if stopping:
                        queued.done.cancel()
                    else:
                        queued.done.set_exception(exc)
                if stopping:
                    self._queued = []
                    raise
                continue
            for queued, result in zip(batch, results, strict=True):
                if isinstance(result, sqlite3.Error):
                    queued.done.set_exception(result)
                else:
                    queued.done.set_result(result)

    async def _run_sqlite(self, batch: list[_Queued]) -> list[list[Rows] | sqlite3.Error]:
        async with self._engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver = raw.driver_connection
            assert isinstance(driver, FewHopsConnection)
            work = [(q.statements, q.params) for q in batch]
            return await driver.write_with_connection(_run_sqlite, work)

    async def _run_postgresql(self, batch: list[_Queued], held: _Held) -> list[list[Rows]]:
        statement = batch[0].statements[0]
        values = statement.constants | batch[-1].params | {"ordinal": list(range(len(batch)))}
        for name in batch[0].per_write:
            values[name] = [q.params[name] for q in batch]
        for attempt in (1, 2):
            try:
                result = await (await held.connection()).exec_driver_sql(statement.sql, values)
                rows = result.all()
                break
            except DBAPIError as exc:
                if exc.connection_invalidated:
                    await held.drop()  # the retry connects afresh
                if attempt == 2 or not (exc.connection_invalidated or _deadlocked(exc)):
                    raise
        per_write: list[Rows] = [[] for _ in batch]
        for row in rows:
            per_write[row[0]].append(tuple(row[1:]))
        return [[one] for one in per_write]

    async def dispose(self) -> None:
        """Close the AUTOCOMMIT engine's connections (the write engine is the store's)."""
        if self.dialect == "postgresql":
            await self._engine.dispose()
