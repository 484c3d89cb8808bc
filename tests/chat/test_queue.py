"""The command queue: bounded, in order per person, on a thread of its own, a failing job
never stops a worker, and a stop answers every job it accepted."""

from __future__ import annotations

import asyncio
import threading
import zlib
from collections.abc import Awaitable, Callable

import pytest

from bot.chat.queue import CommandQueue


def gated(gate: threading.Event, done: list[int], n: int) -> Callable[[], Awaitable[None]]:
    """A job that waits for `gate` (set from the test's loop) without blocking its loop."""

    async def run() -> None:
        await asyncio.to_thread(gate.wait)
        done.append(n)

    return run


async def test_a_full_queue_says_no_at_once_and_takes_work_again_when_it_drains() -> None:
    queue = CommandQueue(workers=2, capacity=3)
    gate = threading.Event()
    done: list[int] = []
    assert [queue.submit(f"U{n}", gated(gate, done, n)) for n in range(5)] == [
        True, True, True, False, False,
    ]  # fmt: skip
    assert queue.pending == 3
    assert queue.refused == 2
    gate.set()
    await queue.join()
    assert sorted(done) == [0, 1, 2]
    assert queue.pending == 0
    assert queue.submit("U9", gated(gate, done, 9))
    await queue.join()
    assert done[-1] == 9
    await queue.close()


async def test_jobs_run_on_the_queues_own_thread_and_loop() -> None:
    queue = CommandQueue(workers=2, capacity=10)
    here = asyncio.get_running_loop()
    seen: list[tuple[str, bool]] = []

    async def where() -> str:
        seen.append((threading.current_thread().name, asyncio.get_running_loop() is here))
        return "done"

    future = queue.call("U1", where)
    assert future is not None
    assert await asyncio.wrap_future(future) == "done"
    assert seen == [("papertide-commands", False)]
    await queue.close()


async def test_call_hands_the_works_exception_to_the_caller() -> None:
    queue = CommandQueue(workers=1, capacity=10)

    async def boom() -> str:
        raise LookupError("no such topic")

    future = queue.call("U1", boom)
    assert future is not None
    with pytest.raises(LookupError, match="no such topic"):
        await asyncio.wrap_future(future)
    await queue.close()


async def test_one_persons_jobs_run_in_the_order_they_came() -> None:
    queue = CommandQueue(workers=4, capacity=100)
    ran: list[tuple[str, int]] = []

    def job(key: str, n: int) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await asyncio.sleep(0 if n % 2 else 0.001)  # later jobs would overtake if they could
            ran.append((key, n))

        return run

    for n in range(20):
        for key in ("U1", "U2", "U3"):
            assert queue.submit(key, job(key, n))
    await queue.join()
    for key in ("U1", "U2", "U3"):
        assert [n for k, n in ran if k == key] == list(range(20))
    await queue.close()


async def test_a_failing_job_is_logged_and_the_worker_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = CommandQueue(workers=1, capacity=10)
    ran: list[str] = []

    async def boom() -> None:
        raise RuntimeError("boom")

    async def fine() -> None:
        ran.append("fine")

    assert queue.submit("U1", boom)
    assert queue.submit("U1", fine)
    await queue.join()
    assert ran == ["fine"]
    assert queue.pending == 0
    assert any(r.message == "chat.job_failed" for r in caplog.records)
    await queue.close()


async def test_close_finishes_every_accepted_job_then_refuses_and_stops_the_thread() -> None:
    stopped_on: list[str] = []

    async def on_stop() -> None:
        stopped_on.append(threading.current_thread().name)

    queue = CommandQueue(workers=2, capacity=10, on_stop=on_stop)
    gate = threading.Event()
    done: list[int] = []
    for n in range(6):
        assert queue.submit(f"U{n % 3}", gated(gate, done, n))
    closing = asyncio.create_task(queue.close())
    await asyncio.sleep(0)  # close has begun: it refuses from now on
    assert not queue.submit("U9", gated(gate, done, 9))
    assert not closing.done()
    gate.set()
    await closing
    assert sorted(done) == [0, 1, 2, 3, 4, 5]  # nothing accepted was lost
    assert stopped_on == ["papertide-commands"]  # after the jobs, on the queue's own loop
    assert not any(t.name == "papertide-commands" for t in threading.enumerate())


async def test_close_gives_up_on_a_job_that_never_ends_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    queue = CommandQueue(workers=1, capacity=10)
    assert queue.submit("U1", asyncio.Event().wait)  # an Event of the queue's loop, never set
    await queue.close(drain_seconds=0.05)
    assert any(r.message == "chat.queue_abandoned" for r in caplog.records)
    assert not any(t.name == "papertide-commands" for t in threading.enumerate())


async def test_a_queue_never_used_closes_without_a_thread() -> None:
    stopped: list[bool] = []

    async def on_stop() -> None:
        stopped.append(True)

    queue = CommandQueue(on_stop=on_stop)
    await queue.close()
    assert stopped == [True]
    assert not queue.submit("U1", asyncio.Event().wait)


def test_a_queue_needs_a_worker_and_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        CommandQueue(workers=0)
    with pytest.raises(ValueError, match="at least one worker"):
        CommandQueue(capacity=0)


async def learnt(queue: CommandQueue, now: list[float], seconds: float, keys: list[str]) -> None:
    """Teach `queue`, one job at a time, that a job takes `seconds` (on a clock jobs move)."""

    async def job() -> None:
        now[0] += seconds

    for n in range(30):
        assert queue.submit(keys[n % len(keys)], job)
        await queue.join()


async def test_a_flood_is_bounded_by_the_wait_it_would_cause_not_only_by_capacity() -> None:
    now = [100.0]
    queue = CommandQueue(workers=1, capacity=50, wait_budget=0.9, clock=lambda: now[0])
    await learnt(queue, now, 0.5, ["U1"])  # each job "takes" half a second
    await queue.join()
    assert queue.job_seconds == pytest.approx(0.5, abs=0.01)
    gate = threading.Event()
    done: list[int] = []
    assert queue.submit("U1", gated(gate, done, 1))  # nothing ahead
    assert queue.submit("U1", gated(gate, done, 2))  # one ahead: about half a second
    assert not queue.submit("U1", gated(gate, done, 3))  # two ahead: past the budget
    assert queue.pending == 2  # far below the capacity of 50
    gate.set()
    await queue.join()
    # A job that has run far longer than the average (a stalled database) counts as long.
    stalled = threading.Event()
    assert queue.submit("U1", gated(stalled, done, 4))
    await asyncio.sleep(0.05)  # it has started
    now[0] += 5.0
    assert not queue.submit("U1", gated(stalled, done, 5))
    stalled.set()
    await queue.close()
    assert done == [1, 2, 4]


async def test_the_first_burst_is_bounded_by_time_before_any_job_finished() -> None:
    """Before any job finished the guess rules: the burst at a start (when every answer
    was slowest) is cut at the budget, not let in up to the capacity."""
    queue = CommandQueue(workers=1, capacity=50, wait_budget=0.25, clock=lambda: 0.0)
    gate = threading.Event()
    done: list[int] = []
    taken = [queue.submit("U1", gated(gate, done, n)) for n in range(10)]
    assert taken == [True, True, True] + [False] * 7  # 0, 0.1, 0.2 s ahead; then 0.3
    gate.set()
    await queue.close()


async def test_a_job_is_refused_when_its_own_worker_is_too_far_behind() -> None:
    """People are spread over workers by a hash: a worker with a line of its own is
    judged by that line, even while the queue as a whole has room."""
    now = [100.0]
    queue = CommandQueue(workers=2, capacity=50, wait_budget=0.9, clock=lambda: now[0])
    keys = [f"U{n}" for n in range(40)]
    same = [k for k in keys if zlib.crc32(k.encode()) % 2 == 0][:3]
    other = next(k for k in keys if zlib.crc32(k.encode()) % 2 == 1)
    await learnt(queue, now, 0.5, [*same, other])
    await queue.join()
    gate = threading.Event()
    done: list[int] = []
    assert queue.submit(same[0], gated(gate, done, 1))  # its worker is idle
    assert queue.submit(same[1], gated(gate, done, 2))  # half a second behind
    assert not queue.submit(same[2], gated(gate, done, 3))  # a second behind
    assert queue.submit(other, gated(gate, done, 4))  # the other worker is idle
    gate.set()
    await queue.close()
    assert sorted(done) == [1, 2, 4]
