"""aiosqlite with one thread hop per statement instead of four.

aiosqlite runs every call on its connection's worker thread: SQLAlchemy's adapter makes
a cursor, executes, fetches and closes, four round trips through a queue and the event
loop for one statement. Profiling an unsubscribe click (five statements) found 42 hops,
and at 50 concurrent clients the waits between them, not SQLite, made the latency.

`connect` returns an aiosqlite connection whose cursors do the cursor's creation, the
statement and the first `PREFETCH` rows in one hop (a transaction's BEGIN rides along
with its first statement), and close themselves in that hop
once every row is read. Bigger results (a streamed scan) still come `PREFETCH` rows per
hop, so streaming keeps its bounded memory. Everything touching sqlite3 runs on the
worker thread; the loop side reads only values the hop handed back. A write
transaction (BEGIN IMMEDIATE) first queues at its file's `WriteGate` (sqlite_gate.py),
which it leaves at commit, rollback or close: the process's engines write one at a time.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, TypeVar, cast

import aiosqlite

from bot.store.sqlite_gate import WriteGate, gate_for

_T = TypeVar("_T")
# Rows fetched in the statement's own hop: a topic page's 30 papers, a fan-out's ids.
PREFETCH = 256
_ITER_CHUNK = 64  # aiosqlite's own default, for `async for` over a cursor
# papertide's engines begin every transaction themselves (bot.store.engine): the BEGIN
# travels with the transaction's first statement instead of taking a hop of its own.
_BEGINS = frozenset({"BEGIN", "BEGIN IMMEDIATE", "BEGIN DEFERRED", "BEGIN EXCLUSIVE"})
# A transaction begun so takes the write lock at once: it queues at the file's WriteGate.
_WRITE_BEGINS = frozenset({"BEGIN IMMEDIATE", "BEGIN EXCLUSIVE"})


class _Snapshot:
    """What a hop read from the sqlite3 cursor, so the loop never touches it."""

    @classmethod
    def nothing(cls) -> _Snapshot:
        """A statement not run yet (a deferred BEGIN): no rows, no description."""
        snapshot = cls.__new__(cls)
        snapshot.description, snapshot.rowcount, snapshot.lastrowid = None, -1, None
        snapshot.rows, snapshot.done = [], True
        return snapshot

    __slots__ = ("description", "done", "lastrowid", "rowcount", "rows")

    def __init__(self, cursor: sqlite3.Cursor, rows: list[Any], done: bool) -> None:
        self.description = cursor.description
        self.rowcount = cursor.rowcount
        self.lastrowid = cursor.lastrowid
        self.rows = rows
        self.done = done


class FewHopsCursor:
    """The subset of `aiosqlite.Cursor` SQLAlchemy's adapter uses, one hop per statement."""

    def __init__(self, conn: FewHopsConnection) -> None:
        self._conn = conn
        self._cursor: sqlite3.Cursor | None = None  # made on the worker thread
        self._rows: deque[Any] = deque()
        self._done = True
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: int | None = None
        self.arraysize = 1
        self.iter_chunk_size = _ITER_CHUNK

    # --- on the worker thread ------------------------------------------------------------

    def _sqlite_cursor(self) -> sqlite3.Cursor:
        if self._cursor is None:
            self._cursor = self._conn._conn.cursor()
        return self._cursor

    def _finish(self, cursor: sqlite3.Cursor, size: int | None) -> _Snapshot:
        if cursor.description is None:  # a statement without rows: done already
            rows, done = [], True
        else:
            rows = cursor.fetchall() if size is None else cursor.fetchmany(size)
            done = size is None or len(rows) < size
        snapshot = _Snapshot(cursor, rows, done)
        if done:
            cursor.close()
            self._cursor = None
        return snapshot

    def _run(self, begin: str | None, sql: str, parameters: Any) -> _Snapshot:
        cursor = self._sqlite_cursor()
        if begin is not None:
            cursor.execute(begin)
        cursor.execute(sql, parameters)
        return self._finish(cursor, PREFETCH)

    def _run_many(self, begin: str | None, sql: str, parameters: Iterable[Any]) -> _Snapshot:
        cursor = self._sqlite_cursor()
        if begin is not None:
            cursor.execute(begin)
        cursor.executemany(sql, parameters)
        return self._finish(cursor, PREFETCH)

    def _more(self, size: int | None) -> _Snapshot:
        return self._finish(self._sqlite_cursor(), size)

    def _close(self) -> None:
        if self._cursor is not None:
            self._cursor.close()
            self._cursor = None

    # --- on the loop -----------------------------------------------------------------------

    def _take(self, snapshot: _Snapshot, *, replace: bool) -> None:
        if replace:
            self._rows = deque(snapshot.rows)
        else:
            self._rows.extend(snapshot.rows)
        self._done = snapshot.done
        self._description = snapshot.description
        self._rowcount = snapshot.rowcount
        self._lastrowid = snapshot.lastrowid

    async def execute(self, sql: str, parameters: Any = None) -> FewHopsCursor:
        """Run `sql` and read its first rows, in one hop (a BEGIN waits for the next)."""
        if not parameters and sql.strip().upper() in _BEGINS:
            self._conn.pending_begin = sql
            self._take(_Snapshot.nothing(), replace=True)
            return self
        begin = await self._conn.begin_now()
        snapshot = await self._conn.hop(self._run, begin, sql, parameters or ())
        self._take(snapshot, replace=True)
        return self

    async def executemany(self, sql: str, parameters: Iterable[Any]) -> FewHopsCursor:
        """Run `sql` once per parameter set, in one hop."""
        begin = await self._conn.begin_now()
        snapshot = await self._conn.hop(self._run_many, begin, sql, parameters)
        self._take(snapshot, replace=True)
        return self

    async def _fill(self, wanted: int | None) -> None:
        while not self._done and (wanted is None or len(self._rows) < wanted):
            size = None if wanted is None else max(wanted - len(self._rows), PREFETCH)
            self._take(await self._conn.hop(self._more, size), replace=False)

    async def fetchone(self) -> Any:
        """The next row, or None."""
        await self._fill(1)
        return self._rows.popleft() if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        """Up to `size` (default `arraysize`) rows."""
        wanted = self.arraysize if size is None else size
        await self._fill(wanted)
        return [self._rows.popleft() for _ in range(min(wanted, len(self._rows)))]

    async def fetchall(self) -> list[Any]:
        """Every remaining row."""
        await self._fill(None)
        rows = list(self._rows)
        self._rows.clear()
        return rows

    async def close(self) -> None:
        """Close the sqlite3 cursor unless its last hop did already."""
        self._rows.clear()
        if not self._done:
            await self._conn.hop(self._close)
            self._done = True

    async def setinputsizes(self, *_sizes: Any) -> None:
        """DB-API no-op, as in sqlite3."""

    async def nextset(self) -> None:
        """sqlite3 has no multiple result sets."""

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._lastrowid

    async def __aenter__(self) -> FewHopsCursor:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()


class FewHopsConnection(aiosqlite.Connection):
    """An aiosqlite connection whose cursors are `FewHopsCursor`s."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, _ITER_CHUNK)
        self.pending_begin: str | None = None  # a BEGIN not sent yet
        self.gate: WriteGate | None = None  # the file's write queue in this process
        self.gate_timeout = 5.0  # sqlite3's busy timeout; `connect` sets the engine's
        self._in_gate = False  # this connection's write transaction holds the gate

    def take_begin(self) -> str | None:
        """The BEGIN the next statement sends first, if any."""
        begin, self.pending_begin = self.pending_begin, None
        return begin

    async def begin_now(self) -> str | None:
        """`take_begin`, after queueing at the gate when that BEGIN takes the write lock."""
        if self.pending_begin in _WRITE_BEGINS:
            await self._enter_gate()
        return self.take_begin()

    async def _enter_gate(self) -> None:
        if self.gate is None or self._in_gate:
            return
        # Bounded like SQLite's busy handler: a writer that waits on another engine of
        # its process while that one waits on it fails as it did before the gate, with
        # SQLite's own error, instead of hanging.
        try:
            async with asyncio.timeout(self.gate_timeout):
                await self.gate.acquire()
        except TimeoutError:
            raise sqlite3.OperationalError("database is locked") from None
        self._in_gate = True

    def _leave_gate(self) -> None:
        if self._in_gate:
            self._in_gate = False
            assert self.gate is not None
            self.gate.release()

    async def commit(self) -> None:
        """Commit, in one hop (none when nothing ran since BEGIN, or outside a transaction),
        then let the next writer in."""
        await self._end("commit")

    async def rollback(self) -> None:
        """Roll back, in one hop (none when nothing ran since BEGIN, or outside a
        transaction: a lone statement in autocommit, see bot.store.engine), then let the
        next writer in."""
        await self._end("rollback")

    async def _end(self, how: str) -> None:
        if self.take_begin() is None:
            try:
                if self._open():
                    await self.hop(getattr(self._conn, how))
            finally:
                self._leave_gate()

    async def close(self) -> None:
        """Close (SQLite rolls back what was open), then let the next writer in."""
        try:
            await super().close()
        finally:
            self._leave_gate()

    def _open(self) -> bool:
        # sqlite3 commits and rolls back nothing outside a transaction; a closed connection
        # still takes the hop, so sqlite3 raises as it would have.
        return self._connection is None or self._connection.in_transaction

    def cursor(self) -> FewHopsCursor:  # type: ignore[override]
        return FewHopsCursor(self)

    async def hop(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(*args)` on the connection's worker thread."""
        result = await self._execute(fn, *args)  # type: ignore[no-untyped-call]
        return cast(_T, result)

    async def hop_with_connection(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`fn(sqlite3_connection, *args)` on the worker thread: work that runs several
        statements (a whole transaction) in one hop (bot.store.oneshot)."""
        return await self.hop(self._with_connection, fn, args)

    async def write_with_connection(self, fn: Callable[..., _T], *args: Any) -> _T:
        """`hop_with_connection` for a write transaction `fn` runs by itself (its own
        BEGIN IMMEDIATE): queued at the file's write gate like every other writer of the
        process, not in SQLite's busy handler behind them."""
        entered = not self._in_gate
        await self._enter_gate()
        try:
            return await self.hop_with_connection(fn, *args)
        finally:
            if entered:
                self._leave_gate()

    def _with_connection(self, fn: Callable[..., _T], args: tuple[Any, ...]) -> _T:
        return fn(self._conn, *args)

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction is open or begun (sqlite3 reads a flag: no hop, no
        thread check)."""
        if self.pending_begin is not None:
            return True
        return self._connection is not None and self._connection.in_transaction


class _RunNow:
    """aiosqlite's request queue, for a connection whose requests run as they are made."""

    def put_nowait(self, item: tuple[Any, Callable[[], Any]]) -> None:
        future, function = item
        try:
            result = function()
        except Exception as exc:
            if future is None:
                raise
            future.set_exception(exc)
        else:
            if future is not None:
                future.set_result(result)


class InlineConnection(FewHopsConnection):
    """A connection that runs every statement on its caller's thread: no hop at all.

    For a loop that does nothing but this database's work (the command queue's thread):
    there a hop bought no concurrency, since its engine has one write connection that
    every job waits for anyway, and each of the hops' thread switches waited for the
    GIL behind the acks' thread, so a transaction of a few milliseconds of CPU held
    that one connection for a hundred. A statement blocks the loop while SQLite runs
    it; so would a write lock held by another process, up to the busy timeout.
    """

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector)
        self._tx = _RunNow()  # type: ignore[assignment]

    def __await__(self) -> Any:
        return self._connect().__await__()  # no worker thread to start


def connect(database: str, *args: Any, **kwargs: Any) -> FewHopsConnection:
    """Like `aiosqlite.connect` (SQLAlchemy's `async_creator_fn` for the aiosqlite dialect)."""
    conn = FewHopsConnection(partial(sqlite3.connect, database, *args, **kwargs))
    conn.gate = gate_for(database) if not kwargs.get("uri") else None
    conn.gate_timeout = float(kwargs.get("timeout", conn.gate_timeout))
    conn._thread.daemon = True  # what SQLAlchemy does for aiosqlite's own connections
    return conn


def connect_inline(database: str, *args: Any, **kwargs: Any) -> InlineConnection:
    """`connect`, for an `InlineConnection`."""
    conn = InlineConnection(partial(sqlite3.connect, database, *args, **kwargs))
    conn.gate = gate_for(database) if not kwargs.get("uri") else None
    conn.gate_timeout = float(kwargs.get("timeout", conn.gate_timeout))
    return conn
