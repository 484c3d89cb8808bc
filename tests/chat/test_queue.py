"""The command queue: bounded, in order per person, a failing job never stops a worker."""

from __future__ import annotations

import asyncio

import pytest

from bot.chat.queue import CommandQueue


async def test_a_full_queue_says_no_at_once_and_takes_work_again_when_it_drains() -> None:
    queue = CommandQueue(workers=2, capacity=3)
    gate = asyncio.Event()
    done: list[int] = []

    def job(n: int) -> object:
        async def run() -> None:
            await gate.wait()
            done.append(n)

        return run

    assert [queue.submit(f"U{n}", job(n)) for n in range(5)] == [True, True, True, False, False]
    assert queue.pending == 3
    gate.set()
    await queue.join()
    assert sorted(done) == [0, 1, 2]
    assert queue.pending == 0
    assert queue.submit("U9", job(9))
    await queue.join()
    assert done[-1] == 9
    await queue.close()


async def test_one_persons_jobs_run_in_the_order_they_came() -> None:
    queue = CommandQueue(workers=4, capacity=100)
    ran: list[tuple[str, int]] = []

    def job(key: str, n: int) -> object:
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


def test_a_queue_needs_a_worker_and_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one worker"):
        CommandQueue(workers=0)
    with pytest.raises(ValueError, match="at least one worker"):
        CommandQueue(capacity=0)
