"""The subscription core on SQLite and PostgreSQL: opt-in, rate limit, tokens, leaving."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker
from sqlmodel import col, select

from bot.catalog.lookup import TopicNotFound
from bot.config import Settings
from bot.outbox.queue import enqueue
from bot.outbox.targets import disable_target
from bot.store.models import Alert, OutboxRow, Person, Subscription, Target, Topic
from bot.store.store import open_store
from bot.subscriptions.addresses import AddressError, normalize_address
from bot.subscriptions.one_click import unsubscribe
from bot.subscriptions.optin import confirm, delete_person, request_subscription
from bot.subscriptions.people import Stopped
from bot.subscriptions.preferences import PreferenceError, update_preferences
from bot.subscriptions.tokens import TokenData, TokenError, make_token, person_token, read_token
from bot.types import MessageKind
from tests.support.web import NOW, SECRET, count, seed

SETTINGS = Settings(secret_key=SecretStr(SECRET), public_url="https://papers.example.org/")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("a@b.org\r\nBcc: x@y.org", "one line"),
        ("a@b.org\nBcc: x@y.org", "one line"),
        ("a@b.org%0d%0aBcc:x@y.org", "exactly one @"),
        ("a@b.org%0d%0a", "not a valid domain"),
        ("", "Enter an email address"),
        ("ann", "exactly one @"),
        ("a@b@c.org", "exactly one @"),
        ("a b@c.org", "no spaces"),
        ("a\x00@c.org", "control"),
        (".ann@c.org", "mailbox name"),
        ("ann@localhost", "valid domain"),
        ("ann@-bad.org", "valid domain"),
        ("ann@exa_mple.org", "valid domain"),
        ("x" * 65 + "@c.org", "mailbox name"),
    ],
)
def test_bad_addresses_are_refused_with_one_clear_line(raw: str, message: str) -> None:
    with pytest.raises(AddressError, match=message) as info:
        normalize_address(raw)
    assert "\n" not in str(info.value)


def test_addresses_are_trimmed_and_their_domain_lowercased() -> None:
    assert (
        normalize_address("  Ann.Lee+papers@Lab.EXAMPLE.org ") == "Ann.Lee+papers@lab.example.org"
    )
    assert normalize_address("ann@bücher.de") == "ann@xn--bcher-kva.de"


async def _outbox(sessions: async_sessionmaker[AsyncSession]) -> list[OutboxRow]:
    async with sessions() as session:
        return list(
            (await session.execute(select(OutboxRow).order_by(col(OutboxRow.id)))).scalars()
        )


async def test_a_request_queues_one_confirmation_and_follows_the_topic(sessions) -> None:  # type: ignore[no-untyped-def]
    await seed(sessions, papers=3)
    async with sessions() as session, session.begin():
        result = await request_subscription(
            session=session,
            email="Ann@LAB.org",
            settings=SETTINGS,
            now=NOW,
            topic_slug="rl-for-llm-agents",
        )
    assert result.action == "confirmation_sent"
    assert result.email == "Ann@lab.org"
    rows = await _outbox(sessions)
    assert [r.kind for r in rows] == [str(MessageKind.CONFIRM)]
    payload = rows[0].payload
    assert set(payload) == {"to", "subject", "text", "html", "headers"}
    assert payload["to"] == "Ann@lab.org"
    assert "https://papers.example.org/confirm/" in payload["text"]
    assert "RL for LLM Agents" in payload["text"]
    async with sessions() as session:
        person = (await session.execute(select(Person))).scalar_one()
        target = (await session.execute(select(Target))).scalar_one()
    assert person.email_status == "pending"
    assert (target.platform, target.kind, target.address, target.person_id) == (
        "email",
        "email",
        "Ann@lab.org",
        person.id,
    )
    assert await count(sessions, Subscription) == 1


async def test_repeated_requests_send_at_most_one_mail_an_hour(sessions) -> None:  # type: ignore[no-untyped-def]
    actions = []
    for minutes in (0, 1, 30, 59, 61):
        async with sessions() as session, session.begin():
            result = await request_subscription(
                session=session,
                email="ann@lab.org",
                settings=SETTINGS,
                now=NOW + timedelta(minutes=minutes),
            )
        actions.append(result.action)
    assert actions == [
        "confirmation_sent",
        "rate_limited",
        "rate_limited",
        "rate_limited",
        "confirmation_sent",
    ]
    assert len(await _outbox(sessions)) == 2
    assert await count(sessions, Person) == 1


async def test_a_confirmed_address_is_mailed_its_manage_link_not_a_confirmation(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session, session.begin():
        result = await request_subscription(
            session=session, email="ann@lab.org", settings=SETTINGS, now=NOW
        )
        person = await session.get(Person, result.person_id)
        assert person is not None
        person.email_status = "confirmed"
    async with sessions() as session, session.begin():
        again = await request_subscription(
            session=session, email="ann@lab.org", settings=SETTINGS, now=NOW + timedelta(hours=2)
        )
    assert again.action == "already_subscribed_sent"
    text = (await _outbox(sessions))[-1].payload["text"]
    assert "/manage/" in text
    assert "/confirm/" not in text


async def test_unknown_topic_is_refused(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        with pytest.raises(TopicNotFound, match="no topic"):
            await request_subscription(
                session=session, email="ann@lab.org", settings=SETTINGS, now=NOW, topic_slug="nope"
            )


async def _pending(sessions: async_sessionmaker[AsyncSession], email: str) -> Person:
    async with sessions() as session, session.begin():
        result = await request_subscription(
            session=session, email=email, settings=SETTINGS, now=NOW
        )
        person = await session.get(Person, result.person_id)
    assert person is not None
    return person


async def test_confirm_checks_the_token_belongs_to_the_person(sessions) -> None:  # type: ignore[no-untyped-def]
    ann, bob = await _pending(sessions, "ann@lab.org"), await _pending(sessions, "bob@lab.org")
    assert ann.id is not None
    assert bob.id is not None
    crossed = make_token(
        SETTINGS, person_id=bob.id, version=ann.token_version, purpose="confirm"
    )  # ann's version, bob's id: a forgery that only the key could have signed
    async with sessions() as session:
        with pytest.raises(TokenError) as info:
            await confirm(session=session, token=crossed, settings=SETTINGS, now=NOW)
    assert info.value.reason == "revoked"
    good = person_token(SETTINGS, ann, "confirm")
    async with sessions() as session, session.begin():
        person = await confirm(session=session, token=good, settings=SETTINGS, now=NOW)
    assert person.email_status == "confirmed"
    async with sessions() as session:
        statuses = dict((await session.execute(select(Person.email, Person.email_status))).all())
    assert statuses == {"ann@lab.org": "confirmed", "bob@lab.org": "pending"}


async def _unsubscribe(engine: AsyncEngine, data: TokenData) -> Stopped | None:
    """A click as the web route makes it, over the store of `engine`'s database."""
    async with open_store(engine.url.render_as_string(hide_password=False), migrate=False) as st:
        return await unsubscribe(one_shot=st.one_shot, engine=st.engine, data=data, now=NOW)


async def test_unsubscribe_stops_mail_already_queued(sessions, engine) -> None:  # type: ignore[no-untyped-def]
    ann = await _pending(sessions, "ann@lab.org")
    assert ann.id is not None
    async with sessions() as session, session.begin():
        target = (await session.execute(select(Target))).scalar_one()
        assert target.id is not None
        await enqueue(
            session=session,
            target_id=target.id,
            kind=MessageKind.DIGEST,
            key="digest-w40",
            payload={},
        )
    token = person_token(SETTINGS, ann, "unsubscribe")
    data = read_token(SETTINGS, token, purpose="unsubscribe")
    stopped = await _unsubscribe(engine, data)
    assert stopped is not None
    assert stopped.id == ann.id
    assert stopped.token_version != ann.token_version  # the old links are revoked
    assert await count(sessions, Person, col(Person.email_status) == "unsubscribed") == 1
    assert await count(sessions, OutboxRow, col(OutboxRow.status) == "pending") == 0
    assert await count(sessions, Target, col(Target.disabled_at).is_not(None)) == 1


async def test_preferences_are_validated_and_replace_the_topics(sessions) -> None:  # type: ignore[no-untyped-def]
    await seed(sessions, papers=1)
    ann = await _pending(sessions, "ann@lab.org")
    async with sessions() as session, session.begin():
        person = await session.get(Person, ann.id)
        assert person is not None
        for tz in ("Mars/Olympus_Mons", "../../etc/passwd", ""):
            with pytest.raises(PreferenceError, match="time zone"):
                await update_preferences(
                    session=session,
                    person=person,
                    topics=[],
                    weekday=0,
                    hour=8,
                    timezone=tz,
                    send_quiet_week=True,
                )
        with pytest.raises(PreferenceError, match="hour"):
            await update_preferences(
                session=session,
                person=person,
                topics=[],
                weekday=0,
                hour=24,
                timezone="UTC",
                send_quiet_week=True,
            )
        prefs = await update_preferences(
            session=session,
            person=person,
            topics=["llm-agent-memory"],
            weekday=4,
            hour=17,
            timezone="Europe/Berlin",
            send_quiet_week=False,
        )
    assert prefs.topics == ("llm-agent-memory",)
    assert (prefs.weekday, prefs.hour, prefs.timezone, prefs.send_quiet_week) == (
        4,
        17,
        "Europe/Berlin",
        False,
    )


async def test_leaving_for_good_deletes_the_person_and_their_mailbox(sessions) -> None:  # type: ignore[no-untyped-def]
    await seed(sessions, papers=1)
    async with sessions() as session, session.begin():
        result = await request_subscription(
            session=session,
            email="ann@lab.org",
            settings=SETTINGS,
            now=NOW,
            topic_slug="rl-for-llm-agents",
        )
        target = (await session.execute(select(Target))).scalar_one()
        assert target.id is not None
        session.add(Alert(target_id=target.id, query="ti:agents"))
        chat = Target(
            platform="slack", kind="user", workspace="T1", address="U1", person_id=result.person_id
        )
        session.add(chat)
    async with sessions() as session, session.begin():
        assert await delete_person(session=session, person_id=result.person_id)
    for model in (Person, Subscription, Alert, OutboxRow):
        assert await count(sessions, model) == 0
    assert await count(sessions, Target) == 1  # the Slack user stays, unlinked
    assert await count(sessions, Target, col(Target.person_id).is_(None)) == 1
    assert await count(sessions, Topic) == 2


async def test_unsubscribe_from_a_bounced_mailbox_still_cancels_its_queue(sessions, engine) -> None:  # type: ignore[no-untyped-def]
    ann = await _pending(sessions, "ann@lab.org")
    async with sessions() as session, session.begin():
        target = (await session.execute(select(Target))).scalar_one()
        assert target.id is not None
        await enqueue(
            session=session, target_id=target.id, kind=MessageKind.DIGEST, key="w41", payload={}
        )
        await disable_target(session=session, target_id=target.id, reason="hard bounce")
    data = read_token(SETTINGS, person_token(SETTINGS, ann, "unsubscribe"), purpose="unsubscribe")
    stopped = await _unsubscribe(engine, data)
    assert stopped is not None
    assert await count(sessions, OutboxRow, col(OutboxRow.status).in_(["pending", "held"])) == 0
    async with sessions() as session:
        target = (await session.execute(select(Target))).scalar_one()
    assert (target.disabled_reason, target.failure_count) == ("hard bounce", 1)  # kept
    # The same link again: it was revoked by the stop, which is success and nothing more.
    assert await _unsubscribe(engine, data) is None
    # The fresh version's link (as on the "unsubscribed" page) names them and stops nothing.
    fresh = make_token(
        SETTINGS, person_id=stopped.id, version=stopped.token_version, purpose="unsubscribe"
    )
    again = await _unsubscribe(engine, read_token(SETTINGS, fresh, purpose="unsubscribe"))
    assert again == stopped
