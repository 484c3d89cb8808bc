"""The one-click unsubscribe's one write, on SQLite and PostgreSQL: a current link stops and
revokes with the mailbox in one statement (one hop on SQLite); replays, revoked links,
unknown people and concurrent clicks answer as the ORM road does."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from pydantic import SecretStr
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import col, select

from bot.config import Settings
from bot.outbox.queue import enqueue
from bot.store.models import OutboxRow, Person, Target
from bot.store.store import Store, open_store
from bot.subscriptions.one_click import unsubscribe
from bot.subscriptions.optin import sign_out_everywhere
from bot.subscriptions.people import Stopped
from bot.subscriptions.tokens import TokenData, TokenError, make_token, person_token, read_token
from bot.types import MessageKind
from tests.support.web import NOW, SECRET, count

SETTINGS = Settings(secret_key=SecretStr(SECRET), public_url="https://papers.example.org/")


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    async with open_store(db_url, migrate=False) as opened:
        yield opened


async def _people(store: Store, n: int, *, queued: bool = True) -> list[Person]:
    """`n` confirmed people, each with their mailbox and (if `queued`) a digest queued."""
    async with store.sessions() as session, session.begin():
        people = [
            Person(email=f"p{i}@lab.org", email_key=f"p{i}@lab.org", email_status="confirmed")
            for i in range(n)
        ]
        session.add_all(people)
        await session.flush()
        for person in people:
            target = Target(
                platform="email", kind="email", address=person.email or "", person_id=person.id
            )
            session.add(target)
            await session.flush()
            assert target.id is not None
            if queued:
                await enqueue(
                    session=session, target_id=target.id, kind=MessageKind.DIGEST,
                    key=f"digest-{target.id}", payload={},
                )  # fmt: skip
    return people


def _link(person: Person) -> TokenData:
    token = person_token(SETTINGS, person, "unsubscribe")
    return read_token(SETTINGS, token, purpose="unsubscribe")


async def _click(store: Store, data: TokenData) -> Stopped | None:
    return await unsubscribe(one_shot=store.one_shot, engine=store.engine, data=data, now=NOW)


async def _state(store: Store, person_id: int) -> tuple[str, int, Any, str | None, list[str]]:
    """(status, token version, mailbox disabled_at, its reason, its queued rows' statuses)."""
    async with store.sessions() as session:
        person = await session.get(Person, person_id)
        assert person is not None
        target = (
            await session.execute(select(Target).where(col(Target.person_id) == person_id))
        ).scalar_one()
        rows = (
            await session.execute(
                select(col(OutboxRow.status)).where(col(OutboxRow.target_id) == target.id)
            )
        ).all()
    return (
        person.email_status,
        person.token_version,
        target.disabled_at,
        target.disabled_reason,
        [status for (status,) in rows],
    )


class _Statements:
    """The statements SQLAlchemy sends on an engine (the ORM road's, say) while inside."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.sql: list[str] = []
        self._engine = engine.sync_engine

    def _seen(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        self.sql.append(statement)

    def __enter__(self) -> _Statements:
        event.listen(self._engine, "before_cursor_execute", self._seen)
        return self

    def __exit__(self, *_exc: object) -> None:
        event.remove(self._engine, "before_cursor_execute", self._seen)


async def test_a_current_link_stops_revokes_and_stops_the_mailbox_in_one_write(
    store: Store,
) -> None:
    ann, bob = await _people(store, 2)
    assert ann.id is not None
    assert bob.id is not None
    with _Statements(store.engine) as orm_road, _Statements(store.one_shot.engine) as one_shot:
        stopped = await _click(store, _link(ann))
    assert stopped is not None
    assert (stopped.id, stopped.email) == (ann.id, ann.email)
    assert stopped.token_version != ann.token_version  # every old link is revoked
    status, version, disabled_at, reason, queued = await _state(store, ann.id)
    assert (status, version, reason, queued) == (
        "unsubscribed", stopped.token_version, "unsubscribed", ["dead"],
    )  # fmt: skip
    assert disabled_at == NOW
    assert await _state(store, bob.id) == ("confirmed", bob.token_version, None, None, ["pending"])
    # Nothing on the write engine's SQLAlchemy road: the one statement went through the
    # AUTOCOMMIT pool (PostgreSQL), the one hop straight to sqlite3 (SQLite).
    assert orm_road.sql == []
    if store.dialect == "postgresql":  # one statement, committed by itself: no BEGIN, COMMIT
        assert len(one_shot.sql) == 1
        assert one_shot.sql[0].startswith("WITH clicks AS")


async def test_a_replay_is_harmless_and_the_fresh_link_still_names_the_person(
    store: Store,
) -> None:
    (ann,) = await _people(store, 1)
    assert ann.id is not None
    data = _link(ann)
    stopped = await _click(store, data)
    assert stopped is not None
    after_first = await _state(store, ann.id)
    fresh = make_token(
        SETTINGS, person_id=ann.id, version=stopped.token_version, purpose="unsubscribe"
    )
    with _Statements(store.engine) as orm_road:
        assert await _click(store, data) is None  # stopped already, which revoked this link
        again = await _click(store, read_token(SETTINGS, fresh, purpose="unsubscribe"))
    assert again == stopped
    assert await _state(store, ann.id) == after_first  # nothing changed, not even a time
    assert orm_road.sql == []  # both settled by the one write, no second trip


async def test_a_revoked_link_of_someone_subscribed_is_refused_and_changes_nothing(
    store: Store,
) -> None:
    (ann,) = await _people(store, 1)
    assert ann.id is not None
    old = _link(ann)
    async with store.sessions() as session, session.begin():
        person = await session.get(Person, ann.id)
        assert person is not None
        await sign_out_everywhere(session=session, person=person)
    before = await _state(store, ann.id)
    with pytest.raises(TokenError) as refused:
        await _click(store, old)
    assert refused.value.reason == "revoked"
    assert await _state(store, ann.id) == before


async def test_a_person_who_left_or_never_was_is_success_and_nothing_more(store: Store) -> None:
    (ann,) = await _people(store, 1)
    assert ann.id is not None
    ghost = make_token(SETTINGS, person_id=ann.id + 1000, version=7, purpose="unsubscribe")
    assert await _click(store, read_token(SETTINGS, ghost, purpose="unsubscribe")) is None
    assert await _state(store, ann.id) == (
        "confirmed", ann.token_version, None, None, ["pending"],
    )  # fmt: skip


async def test_a_person_without_a_mailbox_is_stopped_all_the_same(store: Store) -> None:
    async with store.sessions() as session, session.begin():
        ann = Person(email="ann@lab.org", email_key="ann@lab.org", email_status="confirmed")
        session.add(ann)
    stopped = await _click(store, _link(ann))
    assert stopped is not None
    assert stopped.token_version != ann.token_version
    assert await count(store.sessions, Person, col(Person.email_status) == "unsubscribed") == 1


async def test_concurrent_clicks_stop_each_person_once(store: Store) -> None:
    people = await _people(store, 30)
    ann = people[0]
    assert ann.id is not None
    same = _link(ann)
    clicks = [_click(store, same) for _ in range(12)]
    clicks += [_click(store, _link(p)) for p in people[1:]]
    results = await asyncio.gather(*clicks)
    by_ann, by_others = results[:12], results[12:]
    stops = [r for r in by_ann if r is not None]
    assert len(stops) == 1  # one click stopped Ann; the others found her stopped already
    assert by_ann.count(None) == 11
    status, version, _, _, queued = await _state(store, ann.id)
    assert (status, version, queued) == ("unsubscribed", stops[0].token_version, ["dead"])
    for person, stopped in zip(people[1:], by_others, strict=True):
        assert stopped is not None
        assert person.id is not None
        assert (stopped.id, stopped.email) == (person.id, person.email)
        status, version, disabled_at, _, queued = await _state(store, person.id)
        assert (status, version, queued) == ("unsubscribed", stopped.token_version, ["dead"])
        assert disabled_at is not None
    assert await count(store.sessions, OutboxRow, col(OutboxRow.status) == "pending") == 0


async def test_a_current_and_a_revoked_link_clicked_together_stop_once(store: Store) -> None:
    (ann,) = await _people(store, 1)
    assert ann.id is not None
    revoked = make_token(
        SETTINGS, person_id=ann.id, version=ann.token_version + 1, purpose="unsubscribe"
    )
    outcomes = await asyncio.gather(
        _click(store, read_token(SETTINGS, revoked, purpose="unsubscribe")),
        _click(store, _link(ann)),
        return_exceptions=True,
    )
    # Whichever ran first: the revoked link is refused (she was subscribed) or finds her
    # stopped (success, nothing more); the current one stops her either way.
    assert outcomes[0] is None or (
        isinstance(outcomes[0], TokenError) and outcomes[0].reason == "revoked"
    )
    assert isinstance(outcomes[1], Stopped)
    status, version, _, _, _ = await _state(store, ann.id)
    assert (status, version) == ("unsubscribed", outcomes[1].token_version)


async def test_a_click_after_the_database_dropped_every_connection_still_lands(
    pg_url: str,
) -> None:
    """No pre-ping on this road: the statement that finds its connection dead runs once
    more on a fresh one (what a PostgreSQL restart looks like to the pool)."""
    async with open_store(pg_url, migrate=False) as store:
        ann, bob = await _people(store, 2)
        assert await _click(store, _link(ann)) is not None  # the pool holds a connection now
        admin = make_url(pg_url).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        stopped = await _click(store, _link(bob))
        assert stopped is not None
        assert bob.id is not None
        assert (await _state(store, bob.id))[0] == "unsubscribed"
