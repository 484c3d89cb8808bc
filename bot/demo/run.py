"""`papertide demo`: the whole product, offline, on the embedded defaults.

Everything runs through the production path (sample source → ingest → match engine →
outbox → worker → channels, and the weekly digest through the outbox to SMTP); only
the audience is made up: a demo channel, a demo person with an alert. Idempotent: a
second run reuses the store and its audience, and sends nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.catalog.momentum import last_complete_week
from bot.ingest.poll import PollResult, prepare_store, run_poll
from bot.outbox.channel import Channel
from bot.outbox.queue import message_key
from bot.outbox.worker import deliver_until_idle
from bot.platforms.console import ConsoleChannel
from bot.service.root import AppContext
from bot.service.wiring import fan_out_to
from bot.store.models import OutboxRow, Paper, Person, Target
from bot.subscriptions import follows as subs
from bot.timeutil import utcnow
from bot.types import MessageKind, Platform, TargetKind
from digests.links import links_for
from digests.schedule import enqueue_week

WORKSPACE = "demo"
CHANNEL = "#rl-agents"
CHANNEL_TOPICS = ("rl-for-llm-agents",)
PERSON_EMAIL = "ada@lab.example.org"
PERSON_TOPICS = ("rl-for-llm-agents", "llm-reasoning", "on-policy-distillation")
PERSON_ALERT = 'au:"Yi Wu"'


@dataclass
class DemoRun:
    reused_store: bool
    papers_before: int
    poll: PollResult | None = None
    channel_rows: list[OutboxRow] = field(default_factory=list)
    digest: dict[str, Any] | None = None
    digest_week: str = ""
    delivered: int = 0


async def count_papers(session: AsyncSession) -> int:
    return int((await session.execute(select(func.count()).select_from(Paper))).scalar_one())


async def ensure_audience(*, session: AsyncSession) -> tuple[Target, Target]:
    """The demo channel and the demo person (confirmed, with follows and one alert)."""
    channel = await subs.get_or_create_target(
        session=session,
        platform=Platform.CONSOLE,
        workspace=WORKSPACE,
        address=CHANNEL,
        kind=TargetKind.CHANNEL,
    )
    user = await subs.get_or_create_target(
        session=session,
        platform=Platform.CONSOLE,
        workspace=WORKSPACE,
        address="@ada",
        kind=TargetKind.USER,
    )
    person = (
        await session.execute(select(Person).where(col(Person.email) == PERSON_EMAIL))
    ).scalar_one_or_none()
    if person is None:
        person = Person(email=PERSON_EMAIL, email_status="confirmed", confirmed_at=utcnow())
        session.add(person)
        await session.flush()
    user.person_id = person.id
    for slug in CHANNEL_TOPICS:
        topic = await subs.find_topic(session=session, text=slug)
        await subs.follow_topic(session=session, target=channel, topic=topic)
    for slug in PERSON_TOPICS:
        topic = await subs.find_topic(session=session, text=slug)
        await subs.follow_topic(session=session, target=user, topic=topic)
    if not await subs.list_alerts(session=session, target=user):
        await subs.add_alert(session=session, target=user, query=PERSON_ALERT)
    await session.flush()
    return channel, user


async def run_demo(
    ctx: AppContext,
    *,
    out_dir: Path,
    email_channel: Channel,
    on_progress: Callable[[int, int], None] | None = None,
) -> DemoRun:
    """Ingest the sample, deliver the demo channel's alerts and this week's digest."""
    settings = ctx.settings
    await prepare_store(ctx)
    async with ctx.sessions() as session, session.begin():
        before = await count_papers(session)
        channel, _user = await ensure_audience(session=session)
    run = DemoRun(reused_store=before > 0, papers_before=before)

    run.poll = await run_poll(
        settings=settings,
        sessions=ctx.sessions,
        source_name="sample",
        on_new_matches=fan_out_to(settings),
        on_progress=on_progress,
    )
    week = last_complete_week(utcnow())
    async with ctx.sessions() as session:
        await enqueue_week(session=session, week=week, settings=settings, links=links_for(settings))
    run.digest_week = week
    run.delivered = await deliver_until_idle(
        sessions=ctx.sessions,
        settings=settings,
        channels={
            Platform.CONSOLE: ConsoleChannel(str(out_dir / "console.txt")),
            Platform.EMAIL: email_channel,
        },
    )
    async with ctx.sessions() as session:
        run.channel_rows = list(
            (
                await session.execute(
                    select(OutboxRow)
                    .where(col(OutboxRow.target_id) == channel.id)
                    .order_by(col(OutboxRow.id).desc())
                    .limit(3)
                )
            ).scalars()
        )
        email_target = (
            await session.execute(
                select(Target).where(
                    col(Target.platform) == str(Platform.EMAIL),
                    col(Target.address) == PERSON_EMAIL,
                )
            )
        ).scalar_one_or_none()
        if email_target is not None and email_target.id is not None:
            key = message_key(email_target.id, MessageKind.DIGEST, week)
            row = (
                await session.execute(select(OutboxRow).where(col(OutboxRow.key) == key))
            ).scalar_one_or_none()
            run.digest = dict(row.payload) if row is not None else None
    return run
