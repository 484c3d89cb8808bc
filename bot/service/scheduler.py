"""The schedule: a poll job per source and the hourly digest tick (APScheduler 3).

Delivery is not a scheduled job: workers run their own claim loop (bot.workers).
Poll and digest jobs run only in the leader (see bot.leader); every process
schedules them and a job simply does nothing where the process is a standby, so a
takeover needs no rescheduling. Missed runs are coalesced into one (coalesce=True,
misfire_grace_time) and a job never overlaps itself (max_instances=1). Each job also
runs once shortly after start, so a restart catches up at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from bot.config import Settings
from bot.service.leader import Leadership
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

PollSource = Callable[[str], Awaitable[None]]
RunDueDigests = Callable[[datetime], Awaitable[int]]
TrainTastes = Callable[[datetime], Awaitable[int]]

ARXIV_RSS = "arxiv-rss"
STARTUP_DELAY_SECONDS = 5.0
MISFIRE_GRACE_SECONDS = 900
TASTE_MINUTES = 5  # a reaction's model is trained within this, long before the digest


def arxiv_rss_trigger() -> CronTrigger:
    """Once after each daily announcement.

    arXiv announces Sunday–Thursday at 20:00 US Eastern and the RSS feeds are rebuilt
    around midnight Eastern, so Monday–Friday 00:30 Eastern, with a little jitter.
    """
    return CronTrigger(
        day_of_week="mon-fri", hour=0, minute=30, timezone="America/New_York", jitter=300
    )


def poll_trigger(source: str, settings: Settings) -> BaseTrigger:
    if source == ARXIV_RSS:
        return arxiv_rss_trigger()
    minutes = max(1, settings.poll_interval_minutes)
    # Jitter spreads many installs (and sources) over the interval's first tenth.
    return IntervalTrigger(minutes=minutes, jitter=min(300, minutes * 6))


def build_scheduler(
    *,
    settings: Settings,
    leader: Leadership,
    poll_source: PollSource,
    run_due_digests: RunDueDigests,
    train_tastes: TrainTastes | None = None,
    now: datetime | None = None,
    startup_delay: float = STARTUP_DELAY_SECONDS,
) -> AsyncIOScheduler:
    """An AsyncIOScheduler (not started) with one poll job per source, the digest tick
    and, given `train_tastes`, the ranking models' training (digests/training.py)."""
    now = now or utcnow()
    scheduler = AsyncIOScheduler(
        timezone=UTC,
        job_defaults={
            "coalesce": True,
            "max_instances": 1,
            "misfire_grace_time": MISFIRE_GRACE_SECONDS,
        },
    )
    first = now + timedelta(seconds=startup_delay)
    for source in settings.sources:
        scheduler.add_job(
            _poll_job,
            poll_trigger(source, settings),
            args=(leader, poll_source, source),
            id=f"poll:{source}",
            name=f"poll {source}",
            next_run_time=first,
        )
    scheduler.add_job(
        _digest_job,
        CronTrigger(minute=0, timezone=UTC),
        args=(leader, run_due_digests),
        id="digests",
        name="digest tick",
        next_run_time=first,
    )
    if train_tastes is not None:
        scheduler.add_job(
            _taste_job,
            IntervalTrigger(minutes=TASTE_MINUTES),
            args=(leader, train_tastes),
            id="tastes",
            name="train ranking models",
            next_run_time=first,
        )
    return scheduler


async def _poll_job(leader: Leadership, poll_source: PollSource, source: str) -> None:
    if not leader.is_leader:
        return
    try:
        await poll_source(source)
    except Exception:
        # The next run retries; the source's own state (errors, next check) says why.
        log.exception("scheduler.poll_failed", extra={"source": source})


async def _digest_job(leader: Leadership, run_due_digests: RunDueDigests) -> None:
    if not leader.is_leader:
        return
    try:
        sent = await run_due_digests(utcnow())
        log.info("scheduler.digests", extra={"enqueued": sent})
    except Exception:
        log.exception("scheduler.digests_failed")


async def _taste_job(leader: Leadership, train_tastes: TrainTastes) -> None:
    if not leader.is_leader:
        return
    try:
        await train_tastes(utcnow())
    except Exception:
        # The next run retries: whoever is still due (bot/subscriptions/taste.py).
        log.exception("scheduler.tastes_failed")
