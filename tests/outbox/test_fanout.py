"""Fan-out on both backends: one message per paper per target, grouping, quiet hours."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.config import Settings
from bot.outbox.fanout import enqueue_matches, fold_held
from bot.outbox.quiet_hours import parse_quiet_hours, quiet_until
from bot.store.models import Alert, OutboxRow, Paper, Subscription, Target, Topic
from bot.types import Match, MatchKind

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


async def _world(sessions, n_papers: int = 3, **target_kw):  # type: ignore[no-untyped-def]
    """Two topics, one channel subscribed to both, one user with an alert, n papers."""
    async with sessions() as session, session.begin():
        rl = Topic(
            slug="rl-agents", name="RL for LLM Agents", query="abs:agent", categories=["cs.LG"]
        )
        vis = Topic(slug="vision", name="Vision", query="cat:cs.CV")
        channel = Target(platform="console", kind="channel", address="C1", **target_kw)
        user = Target(platform="console", kind="user", address="U1")
        session.add_all([rl, vis, channel, user])
        await session.flush()
        session.add_all(
            [
                Subscription(target_id=channel.id, topic_id=rl.id),
                Subscription(target_id=channel.id, topic_id=vis.id),
                Subscription(target_id=user.id, topic_id=rl.id),
            ]
        )
        alert = Alert(target_id=user.id, query='abs:"tool use"')
        session.add(alert)
        for i in range(n_papers):
            session.add(
                Paper(
                    id=f"2606.{i:05d}",
                    title=f"Paper {i}",
                    authors=[{"name": "Yi Wu", "affiliations": []}],
                    categories=["cs.LG"],
                    published=NOW,
                    updated=NOW,
                )
            )
        await session.flush()
        return rl.id, vis.id, channel.id, user.id, alert.id


async def _outbox(sessions) -> list[OutboxRow]:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        return list((await session.execute(select(OutboxRow).order_by(OutboxRow.id))).scalars())


async def _fan(sessions, settings: Settings, matches: list[Match], now: datetime = NOW) -> int:  # type: ignore[no-untyped-def]
    async with sessions() as session, session.begin():
        return await enqueue_matches(session=session, matches=matches, settings=settings, now=now)


async def test_topic_and_alert_on_one_paper_make_one_message_with_both_reasons(
    sessions,  # type: ignore[no-untyped-def]
    settings: Settings,
) -> None:
    rl, vis, channel, user, alert = await _world(sessions)
    matches = [
        Match("2606.00000", MatchKind.TOPIC, rl, ("agent", "cs.LG")),
        Match("2606.00000", MatchKind.TOPIC, vis),
        Match("2606.00000", MatchKind.ALERT, alert, ("tool use",)),
    ]
    assert await _fan(sessions, settings, matches) == 2
    rows = {r.target_id: r for r in await _outbox(sessions)}
    assert set(rows) == {channel, user}
    to_user = rows[user].payload
    assert to_user["paper"]["id"] == "2606.00000"
    assert to_user["paper"]["url"] == "https://arxiv.org/abs/2606.00000"
    kinds = sorted((r["kind"], r["id"]) for r in to_user["reasons"])
    assert kinds == [("alert", alert), ("topic", rl)]
    assert [r["slug"] for r in rows[channel].payload["reasons"]] == ["rl-agents", "vision"]
    # The topic's own category filter is not shown as a matched term; the words are.
    assert rows[channel].payload["reasons"][0]["terms"] == ["agent"]
    assert rows[user].key == f"t{user}:paper:2606.00000"
    # A re-poll (same matches, or only the alert this time) sends nothing new.
    assert await _fan(sessions, settings, matches) == 0
    assert await _fan(sessions, settings, matches[2:]) == 0
    assert len(await _outbox(sessions)) == 2


async def test_muted_subscriptions_and_disabled_targets_get_nothing(sessions, settings) -> None:  # type: ignore[no-untyped-def]
    rl, _, channel, user, _ = await _world(sessions)
    async with sessions() as session, session.begin():
        sub = (
            await session.execute(select(Subscription).where(Subscription.target_id == channel))
        ).scalars()
        for s in sub:
            s.muted_until = NOW + timedelta(hours=1)
        target = await session.get(Target, user)
        assert target is not None
        target.disabled_at = NOW
    assert await _fan(sessions, settings, [Match("2606.00001", MatchKind.TOPIC, rl)]) == 0
    assert await _outbox(sessions) == []


async def test_many_papers_for_a_channel_become_one_group_and_are_never_resent(
    sessions,  # type: ignore[no-untyped-def]
    settings: Settings,
) -> None:
    rl, _, channel, user, _ = await _world(sessions, n_papers=8)
    assert user != channel
    settings = settings.model_copy(update={"group_threshold": 5})
    matches = [Match(f"2606.{i:05d}", MatchKind.TOPIC, rl) for i in range(8)]
    # The channel gets one group; the user (not a channel) gets eight single messages.
    assert await _fan(sessions, settings, matches) == 1 + 8
    rows = await _outbox(sessions)
    [group] = [r for r in rows if r.kind == "paper_group"]
    assert group.target_id == channel
    assert group.status == "pending"
    listed = [item["paper"]["id"] for item in group.payload["items"]]
    assert listed == [f"2606.{i:05d}" for i in range(8)]
    assert all(item["reasons"][0]["slug"] == "rl-agents" for item in group.payload["items"])
    reserved = [r for r in rows if r.target_id == channel and r.kind == "paper"]
    assert {r.status for r in reserved} == {"grouped"}
    assert len(reserved) == 8
    # Re-poll: every key is taken, nothing new, no second group.
    assert await _fan(sessions, settings, matches) == 0
    assert len(await _outbox(sessions)) == len(rows)


async def test_quiet_hours_hold_messages_then_fold_them_into_one_summary(
    sessions,  # type: ignore[no-untyped-def]
    settings: Settings,
) -> None:
    rl, _, channel, _, _ = await _world(
        sessions, settings={"quiet_hours": "22-07", "timezone": "Europe/Berlin"}
    )
    night = datetime(2026, 7, 1, 21, 30, tzinfo=UTC)  # 23:30 in Berlin (CEST)
    morning = datetime(2026, 7, 2, 5, 0, tzinfo=UTC)  # 07:00 in Berlin
    for i in range(3):
        await _fan(sessions, settings, [Match(f"2606.{i:05d}", MatchKind.TOPIC, rl)], now=night)
    held = [r for r in await _outbox(sessions) if r.target_id == channel]
    assert {r.status for r in held} == {"held"}
    assert {r.next_attempt_at for r in held} == {morning}
    async with sessions() as session, session.begin():
        assert await fold_held(session=session, now=morning - timedelta(minutes=1)) == 0
    async with sessions() as session, session.begin():
        assert await fold_held(session=session, now=morning) == 3
    rows = [r for r in await _outbox(sessions) if r.target_id == channel]
    [summary] = [r for r in rows if r.kind == "quiet_summary"]
    assert summary.status == "pending"
    assert [i["paper"]["id"] for i in summary.payload["items"]] == [
        "2606.00000",
        "2606.00001",
        "2606.00002",
    ]
    assert {r.status for r in rows if r.kind == "paper"} == {"grouped"}


def test_quiet_hours_parse_and_window() -> None:
    assert parse_quiet_hours("22:30-07:00")[0].minute == 30
    spec = {"quiet_hours": "22-07"}
    assert quiet_until(spec, datetime(2026, 7, 1, 23, tzinfo=UTC)) == datetime(
        2026, 7, 2, 7, tzinfo=UTC
    )
    assert quiet_until(spec, datetime(2026, 7, 1, 3, tzinfo=UTC)) == datetime(
        2026, 7, 1, 7, tzinfo=UTC
    )
    assert quiet_until(spec, datetime(2026, 7, 1, 12, tzinfo=UTC)) is None
    assert quiet_until({"quiet_hours": "9-17"}, datetime(2026, 7, 1, 12, tzinfo=UTC)) is not None
    assert quiet_until({"quiet_hours": "soon"}, datetime(2026, 7, 1, 23, tzinfo=UTC)) is None


async def test_mailboxes_get_the_digest_never_one_mail_per_paper(sessions) -> None:  # type: ignore[no-untyped-def]
    # A mailbox that follows a topic and holds an alert (the digest shows both) must not
    # be sent instant paper messages: the email channel would refuse them as dead rows.
    async with sessions() as session, session.begin():
        topic = Topic(slug="rl", name="RL", query="ti:agents", categories=["cs.LG"])
        box = Target(platform="email", kind="email", address="ann@example.org")
        chat = Target(platform="slack", kind="user", workspace="T1", address="U1")
        session.add_all([topic, box, chat])
        await session.flush()
        session.add_all(
            [
                Subscription(target_id=box.id, topic_id=topic.id),
                Subscription(target_id=chat.id, topic_id=topic.id),
                Alert(target_id=box.id, query="ti:agents"),
            ]
        )
        await session.flush()
        session.add(
            Paper(id="2606.00001", title="Agents", categories=["cs.LG"], published=NOW,
                  updated=NOW)
        )  # fmt: skip
        await session.flush()
        alert_id = (await session.execute(select(Alert.id))).scalar_one()
        matches = [
            Match("2606.00001", MatchKind.TOPIC, topic.id, ("agents",)),
            Match("2606.00001", MatchKind.ALERT, alert_id, ("agents",)),
        ]
        n = await enqueue_matches(session=session, matches=matches, settings=Settings(), now=NOW)
    assert n == 1
    async with sessions() as session:
        rows = (await session.execute(select(OutboxRow))).scalars().all()
    assert [(r.target_id, r.kind) for r in rows] == [(chat.id, "paper")]
