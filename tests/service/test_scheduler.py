"""Leadership (PostgreSQL advisory lock, SQLite single process) and the job schedule."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy import text

from bot.config import Settings
from bot.service.leader import LOCK_KEY, Leadership
from bot.service.scheduler import build_scheduler
from bot.store.engine import create_engine


async def _until(predicate) -> None:  # type: ignore[no-untyped-def]
    for _ in range(200):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached within 10 s")


async def test_one_leader_on_postgresql_and_a_standby_takes_over_when_it_dies(
    pg_url: str,
) -> None:
    engines = [create_engine(pg_url) for _ in range(2)]
    first, second = (Leadership(e, retry_seconds=0.2) for e in engines)
    stops = [asyncio.Event(), asyncio.Event()]
    tasks = [asyncio.create_task(first.run(stops[0]))]
    try:
        await _until(lambda: first.is_leader)
        tasks.append(asyncio.create_task(second.run(stops[1])))
        await _until(lambda: second.leader_known())
        assert not second.is_leader
        assert second.state()["role"] == "standby"
        assert first.state()["role"] == "leader"
        # The leader's connection dies (as with a crash or SIGKILL): the server drops the lock.
        async with engines[1].connect() as conn:
            await conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_locks"
                    " WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()"
                    " AND objid = :lo AND database ="
                    " (SELECT oid FROM pg_database WHERE datname = current_database())"
                ),
                {"lo": LOCK_KEY & 0xFFFFFFFF},
            )
        await _until(lambda: second.is_leader)
        await _until(lambda: not first.is_leader)  # its heartbeat notices, it stops leading
    finally:
        for stop in stops:
            stop.set()
        await asyncio.gather(*tasks)
        for e in engines:
            await e.dispose()
    assert not second.is_leader  # released on stop


async def test_sqlite_process_always_leads(sqlite_url: str) -> None:
    engine = create_engine(sqlite_url)
    try:
        leader = Leadership(engine)
        assert leader.is_leader
        assert leader.leader_known()
    finally:
        await engine.dispose()


async def test_jobs_coalesce_never_overlap_and_run_only_in_the_leader(sqlite_url: str) -> None:
    settings = Settings(database_url=sqlite_url, sources=["arxiv-rss", "arxiv", "sample"])
    engine = create_engine(sqlite_url)
    polled: list[str] = []
    digest_ticks: list[datetime] = []

    async def poll_source(name: str) -> None:
        polled.append(name)

    async def run_due_digests(now: datetime) -> int:
        digest_ticks.append(now)
        return 0

    leader = Leadership(engine)
    scheduler = build_scheduler(
        settings=settings,
        leader=leader,
        poll_source=poll_source,
        run_due_digests=run_due_digests,
        startup_delay=0.0,
    )
    scheduler.start()
    jobs = {job.id: job for job in scheduler.get_jobs()}
    assert set(jobs) == {"poll:arxiv-rss", "poll:arxiv", "poll:sample", "digests"}
    for job in jobs.values():
        assert job.coalesce is True
        assert job.max_instances == 1
        assert job.misfire_grace_time >= 60
    assert isinstance(jobs["poll:arxiv-rss"].trigger, CronTrigger)
    assert isinstance(jobs["poll:arxiv"].trigger, IntervalTrigger)
    assert str(jobs["digests"].trigger) == "cron[minute='0']"
    # The arXiv RSS job fires once per announcement day, after midnight New York time.
    after = jobs["poll:arxiv-rss"].trigger.get_next_fire_time(
        None, datetime(2026, 7, 4, 12, tzinfo=UTC)
    )  # a Saturday
    assert after is not None
    assert after.astimezone(UTC).date() == datetime(2026, 7, 6, tzinfo=UTC).date()

    try:
        await _until(lambda: len(polled) == 3 and len(digest_ticks) == 1)
    finally:
        scheduler.shutdown(wait=False)
    assert sorted(polled) == ["arxiv", "arxiv-rss", "sample"]

    # A standby schedules the same jobs but they do nothing.
    leader.is_leader = False
    polled.clear()
    standby = build_scheduler(
        settings=settings,
        leader=leader,
        poll_source=poll_source,
        run_due_digests=run_due_digests,
        startup_delay=0.0,
    )
    standby.start()
    try:
        await asyncio.sleep(0.5)
    finally:
        standby.shutdown(wait=False)
        await engine.dispose()
    assert polled == []


async def test_the_ranking_models_are_trained_every_few_minutes_by_the_leader(
    sqlite_url: str,
) -> None:
    settings = Settings(database_url=sqlite_url, sources=["sample"])
    engine = create_engine(sqlite_url)
    trained: list[datetime] = []

    async def nothing(_arg: object) -> int:
        return 0

    async def train_tastes(now: datetime) -> int:
        trained.append(now)
        return 0

    leader = Leadership(engine)
    for is_leader in (True, False):
        leader.is_leader = is_leader
        scheduler = build_scheduler(settings=settings, leader=leader, poll_source=nothing,
                                    run_due_digests=nothing, train_tastes=train_tastes,
                                    startup_delay=0.0)  # fmt: skip
        scheduler.start()
        job = scheduler.get_job("tastes")
        assert job is not None
        assert isinstance(job.trigger, IntervalTrigger)
        assert job.trigger.interval.total_seconds() == 300
        assert job.max_instances == 1
        try:
            if is_leader:
                await _until(lambda: len(trained) == 1)
            else:
                await asyncio.sleep(0.5)
        finally:
            scheduler.shutdown(wait=False)
    await engine.dispose()
    assert len(trained) == 1  # the standby's run did nothing
