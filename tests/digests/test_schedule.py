"""Momentum, loading and scheduling on the real store (SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from bot.catalog.momentum import digest_as_of
from bot.catalog.stats import load_momentum, load_totals
from bot.cli import app as cli_app
from bot.config import Settings
from bot.outbox.targets import record_hard_bounce
from bot.store.models import (
    Alert,
    AlertMatch,
    OutboxRow,
    Paper,
    PaperTopic,
    Person,
    Subscription,
    Target,
    Topic,
)  # fmt: skip
from digests.links import PublicLinks
from digests.schedule import due_week, enqueue_due_digests, enqueue_week
from tests.conftest import count_rows

AS_OF = digest_as_of("2026-W39")  # Mon 2026-09-28 00:00 UTC
LINKS = PublicLinks(
    "https://pt.example.org", lambda r, p: f"{p}-{r.id}", mail_from="d@pt.example.org"
)


def paper(pid: str, published: datetime, category: str = "cs.LG", title: str = "") -> Paper:
    return Paper(
        id=pid, title=title or f"Paper {pid}", published=published, updated=published,
        categories=[category], primary_category=category,
        authors=[{"name": "Ada Lovelace", "affiliations": []}],
    )  # fmt: skip


async def seed_catalog(session) -> dict[str, int]:  # type: ignore[no-untyped-def]
    topics = {
        "agents": Topic(slug="agents", name="RL for LLM Agents", query="abs:agent"),
        "memory": Topic(slug="memory", name="Agent Memory", query="abs:memory"),
        "retired": Topic(slug="retired", name="Retired", query="x", active=False),
    }
    session.add_all(topics.values())
    await session.flush()
    ids = {s: t.id for s, t in topics.items()}
    placed = [
        # (id, published, topics, category)
        ("r1", AS_OF - timedelta(hours=1), ["agents", "memory"], "cs.LG"),
        ("r2", AS_OF - timedelta(days=3), ["agents"], "cs.AI"),
        ("r3", AS_OF - timedelta(days=10), ["agents"], "cs.LG"),
        ("r4", AS_OF - timedelta(days=28), ["agents"], "cs.LG"),  # recent window starts here
        ("p1", AS_OF - timedelta(days=28, seconds=1), ["agents"], "cs.LG"),
        ("p2", AS_OF - timedelta(days=56), ["agents", "retired"], "stat.ML"),
        ("old", AS_OF - timedelta(days=56, seconds=1), ["agents"], "cs.LG"),
        ("future", AS_OF, ["agents"], "cs.LG"),  # as-of is exclusive
        ("m1", AS_OF - timedelta(days=2), ["memory"], "eess.SP"),
    ]
    for pid, when, _, category in placed:
        session.add(paper(pid, when, category))
    for i in range(6):  # untopical papers: part of "all new papers"
        session.add(paper(f"x{i}", AS_OF - timedelta(days=1 + 9 * i), "stat.ME"))
    await session.flush()
    for pid, _, slugs, _ in placed:
        for s in slugs:
            session.add(PaperTopic(paper_id=pid, topic_id=ids[s]))
    await session.flush()
    return ids


async def test_load_momentum_counts_windows_weeks_and_universe(sessions, settings) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        await seed_catalog(session)
        await session.commit()
        momentum = await load_momentum(session=session, as_of=AS_OF, settings=settings)
        total_recent, total_prev, universe = await load_totals(session=session, as_of=AS_OF)
    assert set(momentum) == {"agents", "memory"}  # inactive topics are not reported
    agents = momentum["agents"]
    assert (agents.count_4w, agents.count_prev_4w) == (4, 2)
    assert agents.change_pct == 100.0
    # recent: r1 r2 r3 r4 m1 + x0..x3 (days 1, 10, 19, 28) = 9; previous: p1 p2 x4 x5 = 4
    assert (total_recent, total_prev) == (9, 4)
    assert agents.share_pct == 44.44
    assert universe == "cs, stat and eess"
    # Chart: W39 (Sep 21-27) holds r1 r2; W38 r3; Aug 31 (W36) r4; Aug 30 (W35) p1.
    # Weeks from Jul 6: old (Aug 2) in Jul 27, p2 Aug 3, p1 (Aug 30) in Aug 24, r4 Aug 31,
    # r3 (Sep 18) in Sep 14, r1 r2 in Sep 21; "future" (as-of itself) is left out.
    assert agents.weekly == (0, 0, 0, 1, 1, 0, 0, 1, 1, 0, 1, 2)
    assert momentum["memory"].weekly[-1] == 2
    assert not agents.spiking  # far below spike_min_count


async def seed_people(session, ids: dict[str, int]) -> dict[str, Person]:  # type: ignore[no-untyped-def]
    confirmed = datetime(2026, 1, 1, tzinfo=UTC)
    ada = Person(email="ada@example.org", email_status="confirmed", confirmed_at=confirmed)
    bob = Person(email="bob@example.org", email_status="confirmed", confirmed_at=confirmed,
                 send_quiet_week=False)  # fmt: skip
    pending = Person(email="pat@example.org", email_status="pending")
    session.add_all([ada, bob, pending])
    await session.flush()
    slack = Target(platform="slack", kind="user", workspace="T1", address="U1", person_id=ada.id)
    mailbox = Target(platform="email", kind="email", address="ada@example.org", person_id=ada.id)
    channel = Target(platform="slack", kind="channel", workspace="T1", address="C1")
    session.add_all([slack, mailbox, channel])
    await session.flush()
    session.add_all([
        Subscription(target_id=slack.id, topic_id=ids["agents"]),
        Subscription(target_id=mailbox.id, topic_id=ids["memory"]),
        Subscription(target_id=channel.id, topic_id=ids["retired"]),
    ])  # fmt: skip
    alert = Alert(target_id=slack.id, query='ti:"paper r3"')
    session.add(alert)
    await session.flush()
    session.add(AlertMatch(alert_id=alert.id, paper_id="r2", matched_at=AS_OF - timedelta(days=2)))
    await session.flush()
    return {"ada": ada, "bob": bob, "pending": pending}


async def test_enqueue_week_once_per_recipient_whatever_reruns(sessions, settings) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        ids = await seed_catalog(session)
        await seed_people(session, ids)
        await session.commit()
        dry = await enqueue_week(
            session=session, week="2026-W39", settings=settings, links=LINKS, dry_run=True
        )
        assert (dry.enqueued, dry.recipients) == (1, 2)
        assert await count_rows(sessions, "outbox") == 0
        first = await enqueue_week(session=session, week="2026-W39", settings=settings, links=LINKS)
        again = await enqueue_week(session=session, week="2026-W39", settings=settings, links=LINKS)
        rows = (await session.execute(select(OutboxRow))).scalars().all()
        target = (await session.execute(
            select(Target).where(Target.address == "ada@example.org")
        )).scalar_one()  # fmt: skip
    # Bob follows nothing and chose no quiet-week mail; Pat never confirmed.
    assert (first.enqueued, first.quiet_skipped) == (1, 1)
    assert (again.enqueued, again.already) == (0, 1)
    (row,) = rows
    assert row.key == f"t{target.id}:digest:2026-W39"
    assert row.kind == "digest"
    assert row.target_id == target.id
    text = row.payload["text"]
    # Ada's follows from Slack (agents) and from email (memory) are both in.
    assert "== RL for LLM Agents ==" in text
    assert "== Agent Memory ==" in text
    assert "Retired" not in text
    assert "[alert] Paper r2" in text  # the alert's paper ranks first
    agents = text.split("== RL for LLM Agents ==")[1].split("==")[0]
    assert agents.index("Paper r2") < agents.index("Paper r1")
    assert "Paper r3" not in text.split("YOUR ALERTS")[0]  # r3 is from week 38
    assert row.payload["to"] == "ada@example.org"
    assert row.payload["headers"]["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"


async def test_disabled_mailbox_gets_no_digest(sessions, settings) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        ids = await seed_catalog(session)
        await seed_people(session, ids)
        box = (
            await session.execute(select(Target).where(Target.address == "ada@example.org"))
        ).scalar_one()
        box.disabled_at = AS_OF
        await session.commit()
        run = await enqueue_week(session=session, week="2026-W39", settings=settings, links=LINKS)
    assert run.enqueued == 0
    assert run.disabled == 1


def test_due_week_follows_local_weekday_and_hour() -> None:
    ny = dict(timezone="America/New_York", weekday=0, hour=8, since=None)
    # Monday 2026-09-28 08:00 in New York is 12:00 UTC (EDT).
    assert due_week(now=datetime(2026, 9, 28, 12, tzinfo=UTC), **ny) == "2026-W39"
    assert due_week(now=datetime(2026, 9, 28, 11, 59, tzinfo=UTC), **ny) == "2026-W38"
    tokyo = dict(timezone="Asia/Tokyo", weekday=0, hour=8, since=None)
    # Monday 08:00 in Tokyo is Sunday 23:00 UTC: week 39 is not over, so week 38 it is.
    assert due_week(now=datetime(2026, 9, 27, 23, tzinfo=UTC), **tokyo) == "2026-W38"
    late = dict(timezone="UTC", weekday=0, hour=8, since=datetime(2026, 9, 30, tzinfo=UTC))
    assert due_week(now=datetime(2026, 10, 1, tzinfo=UTC), **late) is None
    assert due_week(now=datetime(2026, 10, 5, 8, tzinfo=UTC), **late) == "2026-W40"
    assert due_week(now=datetime(2026, 10, 5, 8, tzinfo=UTC), timezone="Mars/Base", weekday=0,
                    hour=8, since=None) == "2026-W40"  # fmt: skip


async def test_enqueue_due_digests_at_the_recipients_local_hour(sessions, settings) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        ids = await seed_catalog(session)
        people = await seed_people(session, ids)
        ada = people["ada"]
        ada.timezone, ada.digest_hour, ada.confirmed_at = (
            "America/New_York",
            8,
            datetime(2026, 9, 25, tzinfo=UTC),
        )
        people["bob"].email_status = "unsubscribed"
        await session.commit()
        early = await enqueue_due_digests(
            session=session,
            now=datetime(2026, 9, 28, 11, tzinfo=UTC),
            settings=settings,
            links=LINKS,
        )
        due = await enqueue_due_digests(
            session=session,
            now=datetime(2026, 9, 28, 12, 5, tzinfo=UTC),
            settings=settings,
            links=LINKS,
        )
        later = await enqueue_due_digests(
            session=session,
            now=datetime(2026, 9, 29, 9, tzinfo=UTC),
            settings=settings,
            links=LINKS,
        )
        keys = (await session.execute(select(OutboxRow.key))).scalars().all()
    assert (early, due, later) == (0, 1, 0)
    assert [k.endswith(":digest:2026-W39") for k in keys] == [True]


async def test_hard_bounces_are_counted_on_the_target(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        target = Target(platform="email", kind="email", address="x@example.org")
        session.add(target)
        await session.flush()
        assert target.id is not None
        counts = [await record_hard_bounce(session=session, target_id=target.id) for _ in range(3)]
        await session.commit()
    assert counts == [1, 2, 3]


def test_cli_preview_and_send(
    sqlite_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAPERTIDE_DATABASE_URL", sqlite_url)
    runner = CliRunner()
    out = tmp_path / "digest.html"
    done = runner.invoke(
        cli_app,
        ["digest", "preview", "--sample", "--week", "2026-W39", "--out", str(out), "--text"],
    )
    assert done.exit_code == 0, done.output
    assert "RL for LLM Agents" in out.read_text()
    assert "up 141% on the four weeks before" in out.with_suffix(".txt").read_text()
    missing = runner.invoke(
        cli_app, ["digest", "preview", "--email", "nobody@example.org", "--out", str(out)]
    )
    assert missing.exit_code == 1
    assert "no recipient with email nobody@example.org" in missing.output
    bad = runner.invoke(cli_app, ["digest", "send", "--week", "2026-W99"])
    assert bad.exit_code == 1
    assert "not an ISO week" in bad.output
    sent = runner.invoke(cli_app, ["digest", "send", "--week", "2026-W39", "--dry-run"])
    assert sent.exit_code == 0
    assert "2026-W39: would enqueue 0 of 0 recipients" in sent.output
    both = runner.invoke(
        cli_app, ["digest", "preview", "--sample", "--email", "a@b.c", "--out", str(out)]
    )
    assert both.exit_code == 1


def test_settings_fixture_is_used(settings: Settings) -> None:
    assert settings.spike_min_count == 10
