"""Enqueue weekly digests: one per recipient per ISO week, whatever restarts.

The outbox key `message_key(email_target_id, "digest", "2026-W39")` is the only
memory of what was sent: enqueueing again is a no-op, so the scheduler may call
`enqueue_due_digests` as often as it likes and `digest send` may be re-run.
Rendering happens here, so the outbox row holds the finished mail.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot import collector
from bot.catalog.momentum import last_complete_week
from bot.config import Settings
from bot.outbox.queue import enqueue, message_key
from bot.outbox.targets import ensure_targets
from bot.store.models import OutboxRow, Person, Target
from bot.subscriptions.taste import load_corpus
from bot.taste.features import Corpus
from bot.timeutil import utcnow
from bot.types import EmailStatus, MessageKind, Platform, TargetKind
from digests.build import WeekData, build_digest
from digests.links import DigestLinks
from digests.load import load_recipients, load_week
from digests.render import DigestRenderer, MailIdentity
from digests.taste import with_tastes

log = logging.getLogger(__name__)
BATCH = 500


@dataclass(slots=True)
class WeekRun:
    """What one pass did; `enqueued` counts new outbox rows (or would, in a dry run)."""

    week: str
    recipients: int = 0
    enqueued: int = 0
    already: int = 0
    quiet_skipped: int = 0
    disabled: int = 0


def due_week(
    *, timezone: str, weekday: int, hour: int, now: datetime, since: datetime | None
) -> str | None:
    """The ISO week whose digest is due at `now` for this schedule, or None.

    The most recent local (weekday, hour) slot at or before `now` decides; its digest
    covers the last complete UTC week at that slot. Slots before `since` (confirmation)
    are not due, so a new recipient is not sent last week's digest mid-week.
    """
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        zone = ZoneInfo("UTC")
    local = now.astimezone(zone)
    day = local.date() - timedelta(days=(local.weekday() - weekday) % 7)
    slot = datetime.combine(day, time(min(max(hour, 0), 23)), tzinfo=zone)
    if slot > local:
        slot -= timedelta(days=7)
    slot_utc = slot.astimezone(UTC)
    if since is not None and slot_utc < since:
        return None
    return last_complete_week(slot_utc)


async def ensure_email_targets(
    *, session: AsyncSession, people: Sequence[Person]
) -> dict[int, Target]:
    """Each person's mailbox target, by person id (created in one statement if missing)."""
    wanted: dict[str, int | None] = {p.email: p.id for p in people if p.id and p.email}
    found = await ensure_targets(
        session=session,
        platform=Platform.EMAIL,
        kind=TargetKind.EMAIL,
        workspace="",
        addresses=wanted,
    )
    return {wanted[address] or 0: target for address, target in found.items()}


class WeekCache:
    """Loads a week's shared data at most once, and only when someone still needs it."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._weeks: dict[str, WeekData] = {}
        self._renderers: dict[str, DigestRenderer] = {}
        self._corpora: dict[str, Corpus] = {}

    def renderer(self, week: str, links: DigestLinks) -> DigestRenderer:
        """One renderer per week and run: topic sections are rendered once, then reused."""
        if week not in self._renderers:
            identity = MailIdentity(self._settings.mail_from)
            self._renderers[week] = DigestRenderer(links=links, identity=identity)
        return self._renderers[week]

    async def get(self, session: AsyncSession, week: str) -> WeekData:
        if week not in self._weeks:
            self._weeks[week] = await load_week(session=session, week=week, settings=self._settings)
        return self._weeks[week]

    async def corpus(self, session: AsyncSession, week: str) -> Corpus:
        """The week's papers as tf-idf rows, for the recipients' tastes (loaded once)."""
        if week not in self._corpora:
            papers = (await self.get(session, week)).papers
            self._corpora[week] = await load_corpus(session=session, paper_ids=list(papers))
        return self._corpora[week]


async def enqueue_for_people(
    *,
    session: AsyncSession,
    people: Sequence[Person],
    week: str,
    weeks: WeekCache,
    settings: Settings,
    links: DigestLinks,
    dry_run: bool = False,
) -> WeekRun:
    """Build, render and enqueue `week`'s digest for each of `people` who lacks it."""
    run = WeekRun(week, recipients=len(people))
    targets = await ensure_email_targets(session=session, people=people)
    keys = {pid: message_key(t.id or 0, MessageKind.DIGEST, week) for pid, t in targets.items()}
    sent = set(
        (
            await session.execute(
                select(col(OutboxRow.key)).where(col(OutboxRow.key).in_(list(keys.values())))
            )
        )
        .scalars()
        .all()
    )
    todo = []
    for person in people:
        target = targets.get(person.id or 0)
        if target is None or target.disabled_at is not None:
            run.disabled += 1
        elif keys[person.id or 0] in sent:
            run.already += 1
        else:
            todo.append(person)
    if not todo:
        return run
    data_week = await weeks.get(session, week)
    renderer = weeks.renderer(week, links)
    recipients = await with_tastes(
        session=session,
        recipients=await load_recipients(session=session, people=todo, week=data_week),
        week=data_week,
        corpus_of=lambda: weeks.corpus(session, week),
    )
    # One batch's digests are built, rendered and enqueued with the collector paused
    # (bot/collector.py): a bounded stretch, one batch of people.
    with collector.paused():
        built = [
            build_digest(data, data_week, papers_per_topic=settings.digest_papers_per_topic)
            for data in recipients
        ]
        # Ranked digests share rows, not sections: render the rows they need in a few passes.
        renderer.warm([d for d in built if d is not None and d.missed])
        for data, digest in zip(recipients, built, strict=True):
            if digest is None:
                run.quiet_skipped += 1
                continue
            payload = renderer.render(digest)
            target = targets[data.recipient.id]
            if dry_run:
                run.enqueued += 1
                continue
            run.enqueued += await enqueue(
                session=session,
                target_id=target.id or 0,
                kind=MessageKind.DIGEST,
                key=keys[data.recipient.id],
                payload=payload,
            )
    return run


async def _confirmed_people(session: AsyncSession, after_id: int) -> list[Person]:
    stmt = (
        select(Person)
        .where(col(Person.email_status) == EmailStatus.CONFIRMED, col(Person.id) > after_id)
        .order_by(col(Person.id))
        .limit(BATCH)
    )
    return list((await session.execute(stmt)).scalars())


async def enqueue_week(
    *, session: AsyncSession, week: str | None, settings: Settings, links: DigestLinks,
    dry_run: bool = False, now: datetime | None = None,
) -> WeekRun:  # fmt: skip
    """`digest send`: the week's digest for every confirmed recipient who lacks it.

    `week` defaults to the last complete ISO week. Commits after each batch of people,
    so an interrupted run keeps what it enqueued and a re-run only adds the rest.
    """
    week = week or last_complete_week(now or utcnow())
    weeks = WeekCache(settings)
    await weeks.get(session, week)  # validates the week before touching anyone
    total = WeekRun(week)
    after = 0
    while people := await _confirmed_people(session, after):
        after = people[-1].id or after
        part = await enqueue_for_people(
            session=session, people=people, week=week, weeks=weeks, settings=settings,
            links=links, dry_run=dry_run,
        )  # fmt: skip
        _add(total, part)
        await (session.rollback() if dry_run else session.commit())
    # End the transaction the last (empty) page opened: on SQLite it holds the write lock.
    await session.rollback()
    log.info("digest.enqueue_week", extra={"week": week, "enqueued": total.enqueued})
    return total


async def enqueue_due_digests(
    *, session: AsyncSession, now: datetime, settings: Settings, links: DigestLinks
) -> int:
    """Scheduler job: enqueue the digest of everyone whose local weekday/hour has come."""
    weeks = WeekCache(settings)
    enqueued = 0
    after = 0
    while people := await _confirmed_people(session, after):
        after = people[-1].id or after
        by_week: dict[str, list[Person]] = defaultdict(list)
        for p in people:
            week = due_week(
                timezone=p.timezone, weekday=p.digest_weekday, hour=p.digest_hour, now=now,
                since=p.confirmed_at or p.created_at,
            )  # fmt: skip
            if week is not None:
                by_week[week].append(p)
        for week, group in by_week.items():
            part = await enqueue_for_people(
                session=session, people=group, week=week, weeks=weeks, settings=settings,
                links=links,
            )  # fmt: skip
            enqueued += part.enqueued
        await session.commit()
    await session.rollback()  # release the last page's transaction (SQLite write lock)
    if enqueued:
        log.info("digest.enqueue_due", extra={"enqueued": enqueued})
    return enqueued


def _add(total: WeekRun, part: WeekRun) -> None:
    total.recipients += part.recipients
    total.enqueued += part.enqueued
    total.already += part.already
    total.quiet_skipped += part.quiet_skipped
    total.disabled += part.disabled
