"""`papertide demo`: the whole product, offline, on the embedded defaults.

Everything runs through the production path (sample source → ingest → match engine →
outbox → worker → channels, and the weekly digest through the outbox to SMTP), on the
same composition root as `serve`; only the audience is made up: a demo channel, a demo
person with an alert. Idempotent: a second run reuses the store and its audience, and
sends nothing twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.ask.answer import Answer, TopicRef
from bot.catalog.lookup import find_topic
from bot.catalog.momentum import last_complete_week
from bot.ingest.poll import PollResult
from bot.outbox.channel import Channel
from bot.outbox.payloads import EmailPayload
from bot.outbox.queue import message_key
from bot.outbox.reads import find_message, recent_messages
from bot.outbox.targets import find_target, get_or_create_target
from bot.platforms.console import ConsoleChannel
from bot.service.root import Papertide
from bot.store.models import OutboxRow, Paper, Target
from bot.subscriptions import alerts, follows, people
from bot.timeutil import utcnow
from bot.types import EmailStatus, MessageKind, Platform, TargetKind
from digests.links import links_for
from digests.schedule import enqueue_week

WORKSPACE = "demo"
CHANNEL = "#rl-agents"
CHANNEL_TOPICS = ("rl-for-llm-agents",)
PERSON_EMAIL = "ada@lab.example.org"
PERSON_TOPICS = ("rl-for-llm-agents", "llm-reasoning", "on-policy-distillation")
PERSON_ALERT = 'au:"Yi Wu"'
QUESTION = "which papers train agents with GRPO on ALFWorld, and what do they report?"


@dataclass
class DemoRun:
    reused_store: bool
    papers_before: int
    poll: PollResult | None = None
    channel_rows: list[OutboxRow] = field(default_factory=list)
    digest: EmailPayload | None = None
    digest_week: str = ""
    delivered: int = 0
    answer: Answer | None = None  # QUESTION about the demo channel's topic


async def count_papers(session: AsyncSession) -> int:
    return int((await session.execute(select(func.count()).select_from(Paper))).scalar_one())


async def ensure_audience(*, session: AsyncSession, root: Papertide) -> tuple[Target, Target]:
    """The demo channel and the demo person (confirmed, with follows and one alert)."""
    channel = await get_or_create_target(
        session=session, platform=Platform.CONSOLE, workspace=WORKSPACE, address=CHANNEL,
        kind=TargetKind.CHANNEL,
    )  # fmt: skip
    person = await people.get_or_create_person(
        session=session, email=PERSON_EMAIL, settings=root.settings, status=EmailStatus.CONFIRMED
    )
    if person.email_status != EmailStatus.CONFIRMED:
        await people.set_status(
            session=session, person=person, status=EmailStatus.CONFIRMED, confirmed_at=utcnow()
        )
    user = await get_or_create_target(
        session=session, platform=Platform.CONSOLE, workspace=WORKSPACE, address="@ada",
        kind=TargetKind.USER, person_id=person.id,
    )  # fmt: skip
    for slug in CHANNEL_TOPICS:
        topic = await find_topic(session=session, text=slug)
        await follows.follow_topic(session=session, target=channel, topic=topic)
    for slug in PERSON_TOPICS:
        topic = await find_topic(session=session, text=slug)
        await follows.follow_topic(session=session, target=user, topic=topic)
    if not await alerts.list_alerts(session=session, target=user):
        await alerts.add_alert(session=session, target=user, query=PERSON_ALERT)
    return channel, user


async def run_demo(
    root: Papertide,
    *,
    out_dir: Path,
    email_channel: Channel,
    on_progress: Callable[[int, int], None] | None = None,
) -> DemoRun:
    """Ingest the sample, deliver the demo channel's alerts and this week's digest."""
    await root.sync_catalog()
    async with root.store.sessions() as session, session.begin():
        before = await count_papers(session)
        channel, _user = await ensure_audience(session=session, root=root)
        topic = await find_topic(session=session, text=CHANNEL_TOPICS[0])
    run = DemoRun(reused_store=before > 0, papers_before=before)
    run.poll = await root.poll("sample", on_progress=on_progress)
    ref = TopicRef(int(topic.id or 0), topic.slug, topic.name)
    run.answer = await root.asker().ask(QUESTION, topic=ref)
    week = last_complete_week(utcnow())
    async with root.store.sessions() as session:
        await enqueue_week(
            session=session, week=week, settings=root.settings, links=links_for(root.settings)
        )
    run.digest_week = week
    run.delivered = await root.deliver_until_idle(
        {
            Platform.CONSOLE: ConsoleChannel(str(out_dir / "console.txt")),
            Platform.EMAIL: email_channel,
        }
    )
    async with root.store.read_sessions() as session:
        assert channel.id is not None
        run.channel_rows = await recent_messages(session=session, target_id=channel.id, limit=3)
        mailbox = await find_target(
            session=session, platform=Platform.EMAIL, workspace="", address=PERSON_EMAIL
        )
        if mailbox is not None and mailbox.id is not None:
            key = message_key(mailbox.id, MessageKind.DIGEST, week)
            row = await find_message(session=session, key=key)
            run.digest = dict(row.payload) if row is not None else None  # type: ignore[assignment]
    return run
