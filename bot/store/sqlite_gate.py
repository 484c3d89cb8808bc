"""One queue for SQLite's write lock per database file and process, across event loops.

SQLite lets one transaction write at a time. An engine's pool of one write connection
makes its own writers queue in asyncio, but `serve` has two engines on the same file: the
store's (the acks' loop, the outbox worker, the scheduler) and the command queue's (its
own thread and loop). Between them the loser of the lock waited in SQLite's busy
handler, which polls with sleeps of up to 100 ms: a command's commit could sit behind
a sleep long after the other engine's commit had landed. Every write transaction of a
process therefore first takes its file's `WriteGate`: first come first served, whatever
loop or thread asks, and the next writer is woken the moment the previous one commits
or rolls back. Other processes on the same file still meet in the busy handler.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections import deque


class WriteGate:
    """A FIFO lock that coroutines on any event loop, in any thread, may share."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the two fields below, held for no await
        self._held = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    @property
    def held(self) -> bool:
        return self._held

    async def acquire(self) -> None:
        """Wait for the gate (behind those who asked first). Callers bound the wait
        (`asyncio.timeout`): a cancelled waiter leaves the queue."""
        with self._lock:
            if not self._held:
                self._held = True
                return
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            with self._lock:
                queued = waiter in self._waiters
                if queued:
                    self._waiters.remove(waiter)
            if not queued and waiter.done() and not waiter.cancelled():
                self.release()  # handed over just as we were cancelled: pass it on
            raise

    def release(self) -> None:
        """Hand the gate to the longest waiter (on its own loop), or open it."""
        while True:
            with self._lock:
                if not self._waiters:
                    self._held = False
                    return
                waiter = self._waiters.popleft()
            try:
                waiter.get_loop().call_soon_threadsafe(self._hand_over, waiter)
                return
            except RuntimeError:  # that loop is closed: nobody will await it there
                continue

    def _hand_over(self, waiter: asyncio.Future[None]) -> None:
        if waiter.cancelled():
            self.release()
        else:
            waiter.set_result(None)


_gates: dict[str, WriteGate] = {}
_gates_lock = threading.Lock()


def gate_for(database: str) -> WriteGate | None:
    """The process's gate for a database file; None for in-memory databases (each
    connection has its own) and URIs we cannot reduce to a file."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    key = os.path.realpath(database)
    with _gates_lock:
        return _gates.setdefault(key, WriteGate())
