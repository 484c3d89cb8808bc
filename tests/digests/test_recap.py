"""The weekly recap on the real store (SQLite and PostgreSQL).

An alert added during a week covers that week's earlier papers in that week's digest,
without any instant alert for the past; a paper's non-http link is never in the mail.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from bot.catalog.momentum import digest_as_of
from bot.store.models import (
    Alert,
    OutboxRow,
    Paper,
    PaperTopic,
    Person,
    Subscription,
    Target,
    Topic,
)
from digests.links import PublicLinks
from digests.schedule import enqueue_week
from tests.conftest import count_rows

AS_OF = digest_as_of("2026-W39")  # Mon 2026-09-28 00:00 UTC ends the week
MONDAY = AS_OF - timedelta(days=7)
LINKS = PublicLinks(
    "https://pt.example.org", lambda r, p: f"{p}-{r.id}", mail_from="d@pt.example.org"
)


def _paper(pid: str, title: str, stored: object, **extra: object) -> Paper:
    return Paper(
        id=pid, title=title, published=stored, updated=stored, ingested_at=stored,
        categories=["cs.LG"], primary_category="cs.LG",
        authors=[{"name": "Ada Lovelace", "affiliations": []}], **extra,
    )  # fmt: skip


async def test_an_alert_added_midweek_recaps_the_weeks_earlier_papers_without_alerting(
    sessions, settings
) -> None:  # type: ignore[no-untyped-def]
    thursday = MONDAY + timedelta(days=3, hours=9)
    async with sessions() as session:
        topic = Topic(slug="agents", name="RL for LLM Agents", query="abs:agent")
        session.add(topic)
        session.add_all([
            _paper("2609.00001", "Memory for agents, Tuesday", MONDAY + timedelta(days=1)),
            _paper("2609.00002", "Episodic memory, Wednesday", MONDAY + timedelta(days=2)),
            _paper("2609.00003", "Unrelated, Wednesday", MONDAY + timedelta(days=2)),
            _paper("2609.00004", "Memory, the week before", MONDAY - timedelta(days=2)),
        ])  # fmt: skip
        await session.flush()
        ada = Person(email="ada@example.org", email_status="confirmed", confirmed_at=MONDAY)
        session.add(ada)
        await session.flush()
        mailbox = Target(platform="email", kind="email", address=ada.email, person_id=ada.id)
        dm = Target(platform="slack", kind="user", workspace="T1", address="U1", person_id=ada.id)
        session.add_all([mailbox, dm])
        await session.flush()
        session.add(Subscription(target_id=mailbox.id, topic_id=topic.id))
        # Added on Thursday: Tuesday's and Wednesday's papers were stored before it existed.
        session.add(Alert(target_id=dm.id, query="ti:memory", created_at=thursday))
        # Added the week before: what it caught was matched (and alerted) as it arrived.
        session.add(Alert(target_id=dm.id, query="ti:unrelated", created_at=MONDAY - timedelta(1)))
        await session.commit()
        run = await enqueue_week(session=session, week="2026-W39", settings=settings, links=LINKS)
        rows = (await session.execute(select(OutboxRow))).scalars().all()
    assert run.enqueued == 1
    (row,) = rows  # the digest only: no instant alert for the past
    assert row.kind == "digest"
    text, html = row.payload["text"], row.payload["html"]
    alerts = text.split("YOUR ALERTS")[1]
    assert "Alert ti:memory caught 2 papers:" in alerts
    memory = alerts.split("Alert ti:memory")[1]
    assert memory.index("Episodic memory, Wednesday") < memory.index("Memory for agents, Tuesday")
    assert "the week before" not in text
    assert "Unrelated, Wednesday" not in text  # an older alert is not recapped
    assert await count_rows(sessions, "alert_match") == 0  # shown, never recorded
    assert html.count("Episodic memory, Wednesday") == 1


async def test_a_feed_link_that_is_not_http_never_reaches_the_digest(sessions, settings) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        topic = Topic(slug="agents", name="RL for LLM Agents", query="abs:agent")
        session.add(topic)
        session.add(_paper("2609.00005", "Script-linked agents", MONDAY + timedelta(days=1),
                           links={"abs": "javascript:alert(document.cookie)"}))  # fmt: skip
        await session.flush()
        session.add(PaperTopic(paper_id="2609.00005", topic_id=topic.id))
        ada = Person(email="ada@example.org", email_status="confirmed", confirmed_at=MONDAY)
        session.add(ada)
        await session.flush()
        mailbox = Target(platform="email", kind="email", address=ada.email, person_id=ada.id)
        session.add(mailbox)
        await session.flush()
        session.add(Subscription(target_id=mailbox.id, topic_id=topic.id))
        await session.commit()
        await enqueue_week(session=session, week="2026-W39", settings=settings, links=LINKS)
        (row,) = (await session.execute(select(OutboxRow))).scalars().all()
    text, html = row.payload["text"], row.payload["html"]
    assert "Script-linked agents" in text  # the paper is there, linked to arXiv instead
    assert "javascript:" not in html.lower()
    assert "javascript:" not in text.lower()
    assert 'href="https://arxiv.org/abs/2609.00005"' in html
