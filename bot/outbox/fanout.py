"""Fan-out: turn (paper, topic|alert) matches into outbox messages, one per paper per target.

Rules:
- A topic match goes to every enabled target subscribed to the topic (unless muted);
  an alert match goes to the alert's own target.
- One paper reaches one target once, whatever fired: key `t<target>:paper:<paper id>`,
  every reason merged into that one message.
- More than `group_threshold` new papers for one CHANNEL in one call become ONE
  `paper_group` message. Each paper's own key is still written, as a row with status
  `grouped` that is never sent, so a re-poll finds the key taken and sends nothing.
- Inside a target's quiet hours, paper messages are stored `held` until the window
  ends; then `fold_held` (run by every worker's upkeep) folds a target's held rows into
  one `quiet_summary` message and marks them `grouped`. One held row is just released.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.config import Settings
from bot.outbox.payloads import paper_payload
from bot.outbox.queue import STATUS_GROUPED, STATUS_HELD, STATUS_PENDING, enqueue, message_key
from bot.outbox.quiet_hours import quiet_until
from bot.store.models import Alert, OutboxRow, Paper, Subscription, Target, Topic
from bot.timeutil import utcnow
from bot.types import Match, MatchKind, MessageKind, TargetKind

Item = dict[str, Any]  # {"paper": <paper>, "reasons": [<reason>, ...]}


async def enqueue_matches(
    *, session: AsyncSession, matches: Sequence[Match], settings: Settings, now: datetime
) -> int:
    """Enqueue the messages these matches call for; returns how many rows will be sent."""
    if not matches:
        return 0
    topic_ids = sorted({m.ref_id for m in matches if m.kind is MatchKind.TOPIC})
    alert_ids = sorted({m.ref_id for m in matches if m.kind is MatchKind.ALERT})
    targets: dict[int, Target] = {}
    by_topic: dict[int, list[int]] = defaultdict(list)
    topics: dict[int, Topic] = {}
    if topic_ids:
        topics = {
            t.id: t
            for t in (await session.execute(select(Topic).where(col(Topic.id).in_(topic_ids))))
            .scalars()
            .all()
            if t.id is not None
        }
        subs = await session.execute(
            select(col(Subscription.topic_id), Target)
            .join(Target, col(Target.id) == col(Subscription.target_id))
            .where(
                col(Subscription.topic_id).in_(topic_ids),
                col(Target.disabled_at).is_(None),
                or_(col(Subscription.muted_until).is_(None), col(Subscription.muted_until) <= now),
            )
        )
        for topic_id, target in subs.all():
            assert target.id is not None
            targets[target.id] = target
            by_topic[topic_id].append(target.id)
    alerts: dict[int, Alert] = {}
    if alert_ids:
        rows = await session.execute(
            select(Alert, Target)
            .join(Target, col(Target.id) == col(Alert.target_id))
            .where(
                col(Alert.id).in_(alert_ids),
                col(Alert.active).is_(True),
                col(Target.disabled_at).is_(None),
                or_(col(Alert.muted_until).is_(None), col(Alert.muted_until) <= now),
            )
        )
        for alert, target in rows.all():
            assert alert.id is not None
            assert target.id is not None
            alerts[alert.id] = alert
            targets[target.id] = target

    reasons: dict[int, dict[str, dict[tuple[str, int], dict[str, Any]]]] = defaultdict(
        lambda: defaultdict(dict)
    )
    for m in matches:
        if m.kind is MatchKind.TOPIC and m.ref_id in topics:
            topic = topics[m.ref_id]
            reason = {
                "kind": "topic",
                "id": topic.id,
                "slug": topic.slug,
                "name": topic.name,
                # The topic's own category filter is not news to its followers: show the
                # words that matched, not "cs.LG".
                "terms": [t for t in m.terms if t not in topic.categories],
            }
            for target_id in by_topic.get(m.ref_id, []):
                reasons[target_id][m.paper_id][("topic", m.ref_id)] = reason
        elif m.kind is MatchKind.ALERT and m.ref_id in alerts:
            alert = alerts[m.ref_id]
            reason = {"kind": "alert", "id": alert.id, "query": alert.query, "terms": list(m.terms)}
            reasons[alert.target_id][m.paper_id][("alert", m.ref_id)] = reason

    paper_ids = sorted({pid for per_paper in reasons.values() for pid in per_paper})
    papers = {
        p.id: p
        for p in (await session.execute(select(Paper).where(col(Paper.id).in_(paper_ids))))
        .scalars()
        .all()
    }
    enqueued = 0
    for target_id in sorted(reasons):
        items = [
            {"paper": paper_payload(papers[pid]), "reasons": list(why.values())}
            for pid, why in sorted(reasons[target_id].items())
            if pid in papers
        ]
        enqueued += await _enqueue_for_target(
            session=session, target=targets[target_id], items=items, settings=settings, now=now
        )
    return enqueued


async def _enqueue_for_target(
    *, session: AsyncSession, target: Target, items: list[Item], settings: Settings, now: datetime
) -> int:
    assert target.id is not None
    tid = target.id
    keyed = [(message_key(tid, MessageKind.PAPER, item["paper"]["id"]), item) for item in items]
    held_until = quiet_until(target.settings, now, default_timezone=settings.digest_timezone)
    if held_until is not None:
        # Held one by one; fold_held turns them into one summary when the window ends.
        return sum(
            [
                await enqueue(
                    session=session,
                    target_id=tid,
                    kind=MessageKind.PAPER,
                    key=key,
                    payload=item,
                    not_before=held_until,
                    status=STATUS_HELD,
                )
                for key, item in keyed
            ]
        )
    if target.kind == TargetKind.CHANNEL and len(keyed) > settings.group_threshold:
        taken = await _existing_keys(session, [key for key, _ in keyed])
        keyed = [(key, item) for key, item in keyed if key not in taken]
        if len(keyed) > settings.group_threshold:
            return await _enqueue_group(session, tid, keyed)
    return sum(
        [
            await enqueue(
                session=session, target_id=tid, kind=MessageKind.PAPER, key=key, payload=item
            )
            for key, item in keyed
        ]
    )


async def _enqueue_group(
    session: AsyncSession, target_id: int, keyed: list[tuple[str, Item]]
) -> int:
    ids = sorted(item["paper"]["id"] for _, item in keyed)
    digest = hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]
    group_key = message_key(target_id, MessageKind.PAPER_GROUP, digest)
    members = []
    for key, item in keyed:
        # Reserve each paper's key; a paper whose key another process just took is not ours.
        if await enqueue(
            session=session,
            target_id=target_id,
            kind=MessageKind.PAPER,
            key=key,
            payload={"grouped_in": group_key},
            status=STATUS_GROUPED,
        ):
            members.append(item)
    if not members:
        return 0
    return int(
        await enqueue(
            session=session,
            target_id=target_id,
            kind=MessageKind.PAPER_GROUP,
            key=group_key,
            payload={"items": members},
        )
    )


async def _existing_keys(session: AsyncSession, keys: list[str]) -> set[str]:
    query = select(col(OutboxRow.key)).where(col(OutboxRow.key).in_(keys))
    return set((await session.execute(query)).scalars().all())


async def fold_held(*, session: AsyncSession, now: datetime | None = None) -> int:
    """Quiet hours over: fold each target's due held rows into one quiet_summary message."""
    now = now or utcnow()
    query = (
        select(OutboxRow)
        .where(col(OutboxRow.status) == STATUS_HELD, col(OutboxRow.next_attempt_at) <= now)
        .order_by(col(OutboxRow.target_id), col(OutboxRow.id))
    )
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    by_target: dict[int, list[OutboxRow]] = defaultdict(list)
    for row in (await session.execute(query)).scalars().all():
        by_target[row.target_id].append(row)
    folded = 0
    for target_id, rows in by_target.items():
        ids = [row.id for row in rows if row.id is not None]
        until = max(row.next_attempt_at for row in rows)
        summary_key = message_key(target_id, MessageKind.QUIET_SUMMARY, until.isoformat())
        made = len(rows) > 1 and await enqueue(
            session=session,
            target_id=target_id,
            kind=MessageKind.QUIET_SUMMARY,
            key=summary_key,
            payload={"items": [row.payload for row in rows], "until": until.isoformat()},
        )
        # A lone row, or a straggler after its window's summary was made, goes on its own.
        status = STATUS_GROUPED if made else STATUS_PENDING
        await session.execute(
            update(OutboxRow)
            .where(col(OutboxRow.id).in_(ids))
            .values(status=status, next_attempt_at=now),
            execution_options={"synchronize_session": False},
        )
        folded += len(ids)
    return folded
