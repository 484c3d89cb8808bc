"""The outbox queue on both backends: claim with leases, settle, backoff, dead letters."""

from __future__ import annotations

import asyncio
import random
from datetime import timedelta

from sqlalchemy import select

from bot.outbox.channel import Delivered, Failed, Retry
from bot.outbox.queue import (
    claim_batch,
    enqueue,
    message_key,
    release,
    renew_leases,
    requeue_expired,
    retry_dead,
)
from bot.outbox.reads import count_by_status, list_messages
from bot.outbox.settle import backoff_seconds, settle
from bot.store.models import OutboxRow, Target
from bot.timeutil import utcnow
from bot.types import MessageKind

PLATFORMS = ["console", "webhook"]


async def _target(sessions, platform: str = "console", address: str = "demo") -> int:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        target = Target(platform=platform, kind="channel", address=address)
        session.add(target)
        await session.commit()
        assert target.id is not None
        return target.id


async def _fill(sessions, target_id: int, n: int) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session, session.begin():
        for i in range(n):
            await enqueue(
                session=session,
                target_id=target_id,
                kind=MessageKind.PAPER,
                key=message_key(target_id, MessageKind.PAPER, f"2606.{i:05d}"),
                payload={"n": i},
            )


async def _claim(sessions, owner: str, limit: int = 100, lease: float = 60, **kw):  # type: ignore[no-untyped-def]
    async with sessions() as session, session.begin():
        return await claim_batch(
            session=session,
            owner=owner,
            limit=limit,
            lease_seconds=lease,
            platforms=kw.pop("platforms", PLATFORMS),
            **kw,
        )


async def _rows(sessions) -> dict[int, OutboxRow]:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        return {r.id: r for r in (await session.execute(select(OutboxRow))).scalars()}


async def test_concurrent_claims_never_share_a_row(sessions) -> None:  # type: ignore[no-untyped-def]
    tid = await _target(sessions)
    await _fill(sessions, tid, 60)
    batches = await asyncio.gather(*(_claim(sessions, f"w{i}", limit=25) for i in range(4)))
    ids = [c.message.id for batch in batches for c in batch]
    assert len(ids) == 60
    assert len(set(ids)) == 60
    rows = await _rows(sessions)
    assert {r.status for r in rows.values()} == {"sending"}
    assert all(r.attempts == 1 and r.lease_expires_at is not None for r in rows.values())
    first = next(batch for batch in batches if batch)[0].message  # the last claim may be empty
    assert first.target.address == "demo"
    assert first.kind is MessageKind.PAPER


async def test_claim_skips_disabled_targets_and_platforms_without_a_channel(sessions) -> None:  # type: ignore[no-untyped-def]
    slack = await _target(sessions, platform="slack", address="C1")
    gone = await _target(sessions, address="gone")
    ok = await _target(sessions, address="ok")
    for tid in (slack, gone, ok):
        await _fill(sessions, tid, 2)
    async with sessions() as session, session.begin():
        target = await session.get(Target, gone)
        assert target is not None
        target.disabled_at = utcnow()
    claimed = await _claim(sessions, "w")
    assert {c.message.target.id for c in claimed} == {ok}


async def test_settle_sends_retries_with_backoff_honours_retry_after_and_dead_letters(
    sessions,  # type: ignore[no-untyped-def]
) -> None:
    tid = await _target(sessions)
    await _fill(sessions, tid, 4)
    claimed = await _claim(sessions, "w")
    now = utcnow()
    results = [
        (claimed[0], Delivered()),
        (claimed[1], Retry("HTTP 503")),
        (claimed[2], Retry("HTTP 429", after=42.0)),
        (claimed[3], Failed("HTTP 400")),
    ]
    async with sessions() as session, session.begin():
        counts = await settle(
            session=session,
            owner="w",
            results=results,
            max_attempts=3,
            now=now,
            backoff=lambda attempt: backoff_seconds(attempt, random.Random(1)),
        )
    assert (counts.sent, counts.retried, counts.dead) == (1, 2, 1)
    rows = await _rows(sessions)
    sent, backoff, after, failed = (rows[c.message.id] for c in claimed)
    assert sent.status == "sent"
    assert sent.sent_at is not None
    assert sent.lease_owner is None
    assert backoff.status == "pending"
    assert 2.5 <= (backoff.next_attempt_at - now).total_seconds() <= 5.0
    assert after.status == "pending"
    assert after.next_attempt_at == now + timedelta(seconds=42)  # exactly, no jitter
    assert failed.status == "dead"
    assert failed.last_error == "HTTP 400"


async def test_retry_becomes_dead_after_max_attempts(sessions) -> None:  # type: ignore[no-untyped-def]
    tid = await _target(sessions)
    await _fill(sessions, tid, 1)
    for attempt in range(1, 4):
        [item] = await _claim(sessions, "w", now=utcnow() + timedelta(days=attempt))
        assert item.message.attempt == attempt
        async with sessions() as session, session.begin():
            await settle(
                session=session, owner="w", results=[(item, Retry("HTTP 500"))], max_attempts=3
            )
    [row] = (await _rows(sessions)).values()
    assert row.status == "dead"
    assert row.last_error == "gave up after 3 attempts: HTTP 500"
    async with sessions() as session, session.begin():
        assert await retry_dead(session=session) == 1
    [row] = (await _rows(sessions)).values()
    assert (row.status, row.attempts) == ("pending", 0)


async def test_failed_with_disable_target_disables_it_and_buries_its_queue(sessions) -> None:  # type: ignore[no-untyped-def]
    tid = await _target(sessions)
    await _fill(sessions, tid, 3)
    [first, *_] = await _claim(sessions, "w", limit=1)
    async with sessions() as session, session.begin():
        counts = await settle(
            session=session,
            owner="w",
            results=[(first, Failed("channel_not_found", disable_target=True))],
            max_attempts=5,
        )
    assert counts.disabled == 1
    async with sessions() as session:
        target = await session.get(Target, tid)
        assert target is not None
        assert target.disabled_at is not None
        assert target.disabled_reason == "channel_not_found"
    statuses = sorted(r.status for r in (await _rows(sessions)).values())
    assert statuses == ["dead", "dead", "dead"]


async def test_expired_leases_are_requeued_and_released_rows_keep_their_attempts(sessions) -> None:  # type: ignore[no-untyped-def]
    tid = await _target(sessions)
    await _fill(sessions, tid, 4)
    crashed = await _claim(sessions, "crashed", limit=2, lease=1)
    polite = await _claim(sessions, "polite", limit=2, lease=600)
    async with sessions() as session, session.begin():
        assert await requeue_expired(session=session, now=utcnow() + timedelta(seconds=5)) == 2
        await release(session=session, owner="polite", items=[(c, None) for c in polite])
    rows = await _rows(sessions)
    assert {rows[c.message.id].attempts for c in crashed} == {1}  # a crash costs an attempt
    assert {rows[c.message.id].attempts for c in polite} == {0}  # a release does not
    assert {r.status for r in rows.values()} == {"pending"}
    again = await _claim(sessions, "w", now=utcnow() + timedelta(seconds=6))
    assert len(again) == 4


async def test_renewed_leases_do_not_expire(sessions) -> None:  # type: ignore[no-untyped-def]
    tid = await _target(sessions)
    await _fill(sessions, tid, 3)
    await _claim(sessions, "slow-but-alive", lease=1)
    async with sessions() as session, session.begin():
        renewed = await renew_leases(session=session, owner="slow-but-alive", lease_seconds=600)
        assert renewed == 3
        assert await requeue_expired(session=session, now=utcnow() + timedelta(seconds=5)) == 0


async def test_stats_and_list(sessions) -> None:  # type: ignore[no-untyped-def]
    tid = await _target(sessions)
    await _fill(sessions, tid, 3)
    claimed = await _claim(sessions, "w", limit=1)
    async with sessions() as session, session.begin():
        await settle(
            session=session, owner="w", results=[(claimed[0], Failed("x"))], max_attempts=3
        )
    async with sessions() as session:
        counts = await count_by_status(session=session)
        dead = await list_messages(session=session, status="dead")
    assert counts["pending"] == 2
    assert counts["dead"] == 1
    assert counts["sent"] == 0
    assert [r["id"] for r in dead] == [claimed[0].message.id]


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    rng = random.Random(7)
    for attempt, ceiling in [(1, 5), (2, 10), (3, 20), (6, 160), (40, 3600)]:
        delay = backoff_seconds(attempt, rng)
        assert ceiling / 2 <= delay <= ceiling
