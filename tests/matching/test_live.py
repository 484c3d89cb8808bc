"""The live engine: compiled once, then kept current from the store's change feed
(SQLite and PostgreSQL), whoever changes the alerts and however (owner, cascade)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.matching.live import LiveEngine
from bot.outbox.targets import delete_targets
from bot.store.models import AlertChange, Target, Topic
from bot.subscriptions import alerts
from bot.types import Author, MatchKind, PaperRecord

WHEN = datetime(2026, 7, 1, tzinfo=UTC)


def paper(title: str, categories: tuple[str, ...] = ("cs.LG",)) -> PaperRecord:
    return PaperRecord(
        id="2607.00001",
        version=1,
        title=title,
        abstract="",
        authors=(Author("Yi Wu"),),
        categories=categories,
        published=WHEN,
        updated=WHEN,
        source="test",
    )


def fired(live: LiveEngine, title: str) -> set[tuple[MatchKind, int]]:
    return {(m.kind, m.ref_id) for m in live.match(paper(title))}


async def new_target(sessions: async_sessionmaker[AsyncSession], address: str) -> Target:
    async with sessions() as session, session.begin():
        target = Target(platform="slack", kind="user", workspace="T1", address=address)
        session.add(target)
        await session.flush()
        session.expunge(target)
    return target


async def add(sessions: async_sessionmaker[AsyncSession], target: Target, query: str) -> int:
    async with sessions() as session, session.begin():
        alert = await alerts.add_alert(session=session, target=target, query=query)
        assert alert.id is not None
        return alert.id


async def test_alert_changes_reach_the_engine_without_a_reload(sessions) -> None:  # type: ignore[no-untyped-def]
    ann, bob = await new_target(sessions, "U1"), await new_target(sessions, "U2")
    grpo = await add(sessions, ann, "ti:grpo")
    live = LiveEngine()
    assert await live.refresh(sessions) == 1  # the first refresh loads everything
    assert fired(live, "GRPO agents") == {(MatchKind.ALERT, grpo)}

    diffusion = await add(sessions, bob, "ti:diffusion")
    agents = await add(sessions, bob, "ti:agents")
    assert await live.refresh(sessions) == 2  # only the delta
    assert fired(live, "GRPO agents diffusion") == {
        (MatchKind.ALERT, grpo),
        (MatchKind.ALERT, diffusion),
        (MatchKind.ALERT, agents),
    }

    async with sessions() as session, session.begin():
        await alerts.remove_alert(session=session, target=ann, alert_id=grpo)
        await alerts.set_active_alerts(session=session, target=bob, active_ids=[agents])
    await live.refresh(sessions)
    assert fired(live, "GRPO agents diffusion") == {(MatchKind.ALERT, agents)}

    # A target's deletion takes its alerts by ON DELETE CASCADE: the feed sees it too.
    async with sessions() as session, session.begin():
        await delete_targets(session=session, ids=[int(bob.id or 0)])
    await live.refresh(sessions)
    assert fired(live, "GRPO agents diffusion") == set()
    assert len(live) == 0


async def test_a_rolled_back_change_changes_nothing(sessions) -> None:  # type: ignore[no-untyped-def]
    ann = await new_target(sessions, "U1")
    live = LiveEngine()
    await live.refresh(sessions)
    async with sessions() as session:
        await alerts.add_alert(session=session, target=ann, query="ti:grpo")
        await session.rollback()
    assert await live.refresh(sessions) == 0
    assert fired(live, "GRPO") == set()


async def test_a_change_committed_out_of_order_is_picked_up_later(sessions) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL numbers a change when it is written, not when it commits: a reader
    can see seq n+1 before n. The missing number is asked for again until it shows."""
    ann = await new_target(sessions, "U1")
    first = await add(sessions, ann, "ti:grpo")
    live = LiveEngine()
    await live.refresh(sessions)
    second = await add(sessions, ann, "ti:agents")
    async with sessions() as session:
        top = int((await session.execute(select(func.max(AlertChange.seq)))).scalar_one())
    async with sessions() as session, session.begin():
        # The feed as a reader could see it: the change numbered `top` not visible yet.
        await session.execute(AlertChange.__table__.delete().where(AlertChange.seq == top))  # type: ignore[attr-defined]
        await session.execute(insert(AlertChange).values(seq=top + 1, alert_id=first))
    await live.refresh(sessions)
    assert fired(live, "GRPO agents") == {(MatchKind.ALERT, first)}
    async with sessions() as session, session.begin():  # ... and now it commits
        await session.execute(insert(AlertChange).values(seq=top, alert_id=second))
    assert await live.refresh(sessions) == 1
    assert fired(live, "GRPO agents") == {(MatchKind.ALERT, first), (MatchKind.ALERT, second)}


async def test_topics_follow_the_catalog(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session, session.begin():
        topic = Topic(slug="rl", name="RL", query="ti:grpo", categories=["cs.LG"])
        session.add(topic)
        await session.flush()
        topic_id = topic.id
    live = LiveEngine()
    await live.refresh(sessions)
    assert fired(live, "GRPO") == {(MatchKind.TOPIC, topic_id)}
    async with sessions() as session, session.begin():
        found = (await session.execute(select(Topic))).scalar_one()
        found.query = "ti:diffusion"
    await live.refresh(sessions)
    assert fired(live, "GRPO") == set()
    assert fired(live, "diffusion") == {(MatchKind.TOPIC, topic_id)}


async def test_a_stale_engine_reloads_and_old_feed_rows_are_pruned(sessions) -> None:  # type: ignore[no-untyped-def]
    now = [0.0]
    live = LiveEngine(retention_seconds=100, clock=lambda: now[0])
    ann = await new_target(sessions, "U1")
    await add(sessions, ann, "ti:grpo")
    await live.refresh(sessions)
    await add(sessions, ann, "ti:agents")
    now[0] = 40.0
    assert await live.refresh(sessions) == 1
    now[0] = 80.0
    assert await live.refresh(sessions) == 0
    now[0] = 120.0  # the cursor held at 0 s is 100 s old: the rows up to it can go
    assert await live.refresh(sessions) == 0
    async with sessions() as session:
        left = list((await session.execute(select(col(AlertChange.alert_id)))).scalars())
    assert len(left) == 1  # the second alert's change, newer than the pruned cursor
    now[0] = 300.0  # longer than half the retention without a refresh: reload in full
    assert await live.refresh(sessions) == 2
    assert len(fired(live, "GRPO agents")) == 2
