"""Fan-out: (paper, topic|alert) matches become outbox messages, one per paper per target.

Read → plan → write: `enqueue_matches` reads the audience of the matches (followers,
alerts, targets, papers, keys already taken), hands it to the pure
`bot.outbox.fanout_plan.plan_fanout` (where the rules live) and writes the plan.
It runs inside the ingest batch's transaction, so matches and messages commit together.

Quiet hours end in `fold_held` (run by every worker's upkeep): a target's due held rows
become one `quiet_summary` message and are marked `grouped`; one held row is released.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.config import Settings
from bot.outbox.fanout_plan import (
    AlertInfo,
    Audience,
    Plan,
    PlannedGroup,
    Reasons,
    TargetInfo,
    TopicInfo,
    candidate_keys,
    group_payload,
    plan_fanout,
    reasons_by_target,
)
from bot.outbox.payloads import QuietSummaryPayload, ReservedPayload
from bot.outbox.queue import due_held, enqueue, message_key, set_status
from bot.outbox.reads import existing_keys
from bot.store.models import Alert, OutboxRow, Subscription, Target, Topic
from bot.store.records import PAPER, paper_json
from bot.timeutil import utcnow
from bot.types import Match, MatchKind, MessageKind, OutboxStatus, TargetKind

_CHUNK = 500


async def enqueue_matches(
    *, session: AsyncSession, matches: Sequence[Match], settings: Settings, now: datetime
) -> int:
    """Enqueue the messages these matches call for; returns how many rows will be sent."""
    if not matches:
        return 0
    audience = await read_audience(session=session, matches=matches, now=now)
    reasons = reasons_by_target(matches, audience)
    await read_papers_and_keys(session=session, audience=audience, reasons=reasons)
    plan = plan_fanout(
        reasons,
        audience,
        group_threshold=settings.group_threshold,
        default_timezone=settings.digest_timezone,
        now=now,
    )
    return await write_plan(session=session, plan=plan)


async def read_audience(
    *, session: AsyncSession, matches: Sequence[Match], now: datetime
) -> Audience:
    """Topics and their enabled, unmuted followers; active, unmuted alerts and targets.

    Mailboxes are left out: what a mailbox follows, and its alerts, reach it in the
    weekly digest, never as one mail per paper.
    """
    audience = Audience()
    topic_ids = sorted({m.ref_id for m in matches if m.kind is MatchKind.TOPIC})
    alert_ids = sorted({m.ref_id for m in matches if m.kind is MatchKind.ALERT})
    if topic_ids:
        for topic in (
            await session.execute(select(Topic).where(col(Topic.id).in_(topic_ids)))
        ).scalars():
            if topic.id is not None:
                audience.topics[topic.id] = TopicInfo(
                    topic.slug, topic.name, tuple(topic.categories)
                )
        subs = await session.execute(
            select(col(Subscription.topic_id), Target)
            .join(Target, col(Target.id) == col(Subscription.target_id))
            .where(
                col(Subscription.topic_id).in_(topic_ids),
                col(Target.disabled_at).is_(None),
                col(Target.kind) != TargetKind.EMAIL,  # mailboxes get the weekly digest
                or_(col(Subscription.muted_until).is_(None), col(Subscription.muted_until) <= now),
            )
        )
        followers: dict[int, list[int]] = defaultdict(list)
        for topic_id, target in subs.all():
            followers[topic_id].append(_add_target(audience, target))
        audience.followers = dict(followers)
    if alert_ids:
        rows = await session.execute(
            select(Alert, Target)
            .join(Target, col(Target.id) == col(Alert.target_id))
            .where(
                col(Alert.id).in_(alert_ids),
                col(Alert.active).is_(True),
                col(Target.disabled_at).is_(None),
                col(Target.kind) != TargetKind.EMAIL,  # mailboxes get the weekly digest
                or_(col(Alert.muted_until).is_(None), col(Alert.muted_until) <= now),
            )
        )
        for alert, target in rows.all():
            if alert.id is not None:
                _add_target(audience, target)
                audience.alerts[alert.id] = AlertInfo(alert.target_id, alert.query)
    return audience


def _add_target(audience: Audience, target: Target) -> int:
    assert target.id is not None
    audience.targets[target.id] = TargetInfo(TargetKind(target.kind), dict(target.settings))
    return target.id


async def read_papers_and_keys(
    *, session: AsyncSession, audience: Audience, reasons: Reasons
) -> None:
    """The papers someone receives, and which of their message keys are already taken."""
    paper_ids = sorted({pid for per_paper in reasons.values() for pid in per_paper})
    for chunk in _chunks(paper_ids):
        rows = await session.execute(select(PAPER).where(PAPER.c.id.in_(chunk)))
        audience.papers.update({row["id"]: paper_json(row) for row in rows.mappings()})
    for chunk in _chunks(candidate_keys(reasons)):
        audience.taken |= await existing_keys(session=session, keys=chunk)


async def write_plan(*, session: AsyncSession, plan: Plan) -> int:
    """Insert the planned rows; returns how many will be sent (a group counts once)."""
    enqueued = 0
    for step in plan:
        if isinstance(step, PlannedGroup):
            enqueued += await _write_group(session, step)
            continue
        enqueued += await enqueue(
            session=session,
            target_id=step.target_id,
            kind=step.kind,
            key=step.key,
            payload=step.payload,
            status=step.status,
            not_before=step.not_before,
        )
    return enqueued


async def _write_group(session: AsyncSession, group: PlannedGroup) -> int:
    members = []
    for key, item in group.members:
        # Reserve each paper's key; a paper whose key another process just took is not ours.
        if await enqueue(
            session=session,
            target_id=group.target_id,
            kind=MessageKind.PAPER,
            key=key,
            payload=ReservedPayload(grouped_in=group.key),
            status=OutboxStatus.GROUPED,
        ):
            members.append(item)
    if not members:
        return 0
    return int(
        await enqueue(
            session=session,
            target_id=group.target_id,
            kind=MessageKind.PAPER_GROUP,
            key=group.key,
            payload=group_payload(members),
        )
    )


async def fold_held(*, session: AsyncSession, now: datetime | None = None) -> int:
    """Quiet hours over: fold each target's due held rows into one quiet_summary message."""
    now = now or utcnow()
    by_target: dict[int, list[OutboxRow]] = defaultdict(list)
    for row in await due_held(session=session, now=now):
        by_target[row.target_id].append(row)
    folded = 0
    for target_id, rows in by_target.items():
        ids = [row.id for row in rows if row.id is not None]
        until = max(row.next_attempt_at for row in rows)
        summary_key = message_key(target_id, MessageKind.QUIET_SUMMARY, until.isoformat())
        payload = QuietSummaryPayload(
            items=[row.payload for row in rows],  # type: ignore[misc]
            until=until.isoformat(),
        )
        made = len(rows) > 1 and await enqueue(
            session=session,
            target_id=target_id,
            kind=MessageKind.QUIET_SUMMARY,
            key=summary_key,
            payload=payload,
        )
        # A lone row, or a straggler after its window's summary was made, goes on its own.
        status = OutboxStatus.GROUPED if made else OutboxStatus.PENDING
        await set_status(session=session, ids=ids, status=status, now=now)
        folded += len(ids)
    return folded


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]
