"""The one-click unsubscribe (RFC 8058 `List-Unsubscribe=One-Click`, or the page's button)
as one self-committing write.

Mail clients click these in bursts right after a send, so the usual click (a current
link of someone still subscribed) costs one write (bot.store.oneshot): on PostgreSQL one
statement, one round trip; on SQLite one hop to the write connection's thread. In it:

- the person's indexed UPDATE checks the link's token version and stops and revokes in
  the same statement (`people.STOP_IF_CURRENT`): two concurrent clicks cannot both stop,
  and a revoked link changes nothing;
- their mailbox is disabled and what is queued for it cancelled, by the owners' own
  statements (`disable_address_statement`, `cancel_queued_at_statement`) given the
  stopped person's address;
- the person is read, so a replay (stopped already, which revoked the link) and a person
  who left are settled without a second trip.

Anything else (a revoked link of someone still subscribed, a v1 link that names an
address, a click racing another change of the person) takes the ORM road
(`optin.stop_by_link`), which locks the person and decides, and answers exactly as
before.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Final

from sqlalchemy import BindParameter, Integer, Text, any_, bindparam, cast, func, select
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.sql import ClauseElement
from sqlmodel import col

from bot.outbox.queue import cancel_queued_at_statement
from bot.outbox.targets import UNSUBSCRIBED, disable_address_statement
from bot.store.models import Person
from bot.store.oneshot import OneShot
from bot.subscriptions import people
from bot.subscriptions.optin import stop_by_link
from bot.subscriptions.tokens import TokenData
from bot.types import EmailStatus, Platform

log = logging.getLogger(__name__)

_STOPPED = str(EmailStatus.UNSUBSCRIBED)
# The person as the click left them: (stopped by this click, id, email, token version,
# status), or no row when they left for good.
_PERSON = (col(Person.id), col(Person.email), col(Person.token_version), col(Person.email_status))


def _postgresql() -> tuple[ClauseElement]:
    # A batch of clicks (bot.store.oneshot binds their person ids, versions and fresh
    # versions as arrays) in one statement. Data-modifying CTEs run to completion whether
    # the outer SELECT reads them or not, in the statement's one transaction; the outer
    # SELECT reads the snapshot taken before them, so `person` is the person as the click
    # found them. A person clicked twice in one batch is stopped by one of the clicks
    # only (`ordinal` says which); the other finds them subscribed with its version yet
    # not stopped, and takes the ORM road, which sees them stopped.
    def ints(name: str) -> BindParameter[Any]:
        return bindparam(name, type_=ARRAY(Integer))

    arrays = func.unnest(ints("ordinal"), ints("person_id"), ints("version"), ints("fresh"))
    columns = arrays.table_valued("ordinal", "person_id", "version", "fresh")
    clicks = select(columns.render_derived(name="click")).cte("clicks")
    stopped = people.stop_if_current(
        person_id=clicks.c.person_id,
        version=clicks.c.version,
        fresh=clicks.c.fresh,
        also_returning=clicks.c.ordinal,
    ).cte("stopped")
    # `address = ANY (array)`: an index probe per stopped address.
    address = any_(cast(select(func.array_agg(stopped.c.email)).scalar_subquery(), ARRAY(Text)))
    statement = (
        select(
            clicks.c.ordinal,
            stopped.c.id.is_not(None),
            col(Person.id),
            func.coalesce(stopped.c.email, col(Person.email)),
            func.coalesce(stopped.c.token_version, col(Person.token_version)),
            col(Person.email_status),
        )
        .select_from(
            clicks.outerjoin(stopped, stopped.c.ordinal == clicks.c.ordinal).outerjoin(
                Person, col(Person.id) == clicks.c.person_id
            )
        )
        .add_cte(disable_address_statement(address).cte("disabled"))
        .add_cte(cancel_queued_at_statement(address).cte("cancelled"))
    )
    return (statement,)


def _sqlite() -> tuple[ClauseElement, ...]:
    # Four statements in one transaction and one hop. The mailbox's address is the
    # person's whom this click stopped: the fresh version only this click wrote (a person
    # who had it by chance is unsubscribed already, so stopping their mailbox again
    # changes nothing they did not ask for).
    address = (
        select(col(Person.email))
        .where(
            col(Person.id) == bindparam("person_id"),
            col(Person.token_version) == bindparam("fresh"),
            col(Person.email_status) == _STOPPED,
        )
        .scalar_subquery()
    )
    return (
        people.STOP_IF_CURRENT,
        disable_address_statement(address),
        cancel_queued_at_statement(address),
        select(*_PERSON).where(col(Person.id) == bindparam("person_id")),
    )


_STATEMENTS: Final = {"postgresql": _postgresql(), "sqlite": _sqlite()}
# What differs between the clicks of one PostgreSQL batch (the rest is the same for all
# but `now`, which is then the batch's latest).
_PER_CLICK = ("person_id", "version", "fresh")


class _Unsettled:
    """The write could not tell: the ORM road decides."""


UNSETTLED: Final = _Unsettled()


def settle(row: tuple[Any, ...] | None, data: TokenData) -> people.Stopped | _Unsettled | None:
    """What the click means, from the person as the write left them (pure)."""
    if row is None:
        return None  # left for good already: nothing to stop, and that is success
    stopped, person_id, email, version, status = row
    if stopped:
        return people.Stopped(id=person_id, email=email, token_version=version)
    if status == _STOPPED:
        if version == data.version:  # stopped, and this link is still theirs: say so
            return people.Stopped(id=person_id, email=email, token_version=version)
        return None  # stopped already (which revoked this link): success, and nothing more
    return UNSETTLED  # subscribed, yet not stopped: a revoked link, or a race


async def _click(one_shot: OneShot, data: TokenData, now: datetime) -> tuple[Any, ...] | None:
    params = {
        "person_id": data.person_id,
        "version": data.version,
        "fresh": people.fresh_version(data.version),
        "on_platform": str(Platform.EMAIL),
        "in_workspace": "",
        "now": one_shot.driver_time(now),
        "why": UNSUBSCRIBED,  # the mailbox's disabled reason and the cancelled rows' error
        "failed": 0,  # asking to stop is not a delivery failure
    }
    results = await one_shot.run(_STATEMENTS[one_shot.dialect], params, per_write=_PER_CLICK)
    if one_shot.dialect == "postgresql":
        stopped, person_id, email, version, status = results[0][0]
        if stopped:
            return (True, person_id, email, version, _STOPPED)
        return None if person_id is None else (False, person_id, email, version, status)
    stopped_rows, person = results[0], results[-1]
    if stopped_rows:
        return (True, *stopped_rows[0], _STOPPED)
    return (False, *person[0]) if person else None


async def unsubscribe(
    *, one_shot: OneShot, engine: AsyncEngine, data: TokenData, now: datetime
) -> people.Stopped | None:
    """Unsubscribe the address an unsubscribe token names (`data`, from `read_token`): the
    person stopped, with their token version now (their old links are revoked), or None
    if they had left or stopped already. TokenError for a revoked link. `engine` is the
    store's write engine, for the ORM road."""
    if data.version is not None:
        row = await _click(one_shot, data, now)
        if row is not None and row[0]:
            log.info("subscribe.unsubscribed", extra={"person_id": row[1]})
        settled = settle(row, data)
        if not isinstance(settled, _Unsettled):
            return settled
    async with engine.begin() as conn:
        return await stop_by_link(conn=conn, data=data, now=now)
