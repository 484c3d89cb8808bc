"""The `source_state` table's one writer: cursor, ETag, facts and errors per source.

Polling state lives in the database (miniflux-style), so a restart loses nothing; a
batch's state is saved in the transaction that stores its papers. A poll marks its
start and its end in the facts (`poll_started_at`, `poll_finished_at`), so `papertide
status` can tell a poll that stalled from one that is merely running. A validator or
cursor too long for its column is not stored (the next poll fetches unconditionally):
a server's 10 kB ETag must not roll back the batch it came with.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.ingest.sources.base import Batch, StoredState
from bot.store.models import SourceState
from bot.timeutil import utcnow

log = logging.getLogger(__name__)
STATE = SourceState.__table__  # type: ignore[attr-defined]
_LIMITS = {
    "cursor": STATE.c.cursor.type.length,
    "etag": STATE.c.etag.type.length,
    "last_modified": STATE.c.last_modified.type.length,
}


async def load_state(*, session: AsyncSession, name: str) -> StoredState:
    """What a source reads back at the start of a poll (empty for a new source)."""
    row = await session.get(SourceState, name)
    if row is None:
        return StoredState()
    return StoredState(
        cursor=row.cursor, etag=row.etag, last_modified=row.last_modified, data=dict(row.data)
    )


async def _state_row(session: AsyncSession, name: str) -> SourceState:
    row = await session.get(SourceState, name, with_for_update=True)
    if row is None:
        row = SourceState(name=name, data={})
        session.add(row)
    return row


async def save_batch_state(
    *, session: AsyncSession, name: str, batch: Batch, started: datetime
) -> None:
    """Store what came with a persisted batch: cursor, validators, facts; errors reset."""
    row = await _state_row(session, name)
    if batch.cursor is not None:
        row.cursor = _fitting(name, "cursor", batch.cursor, row.cursor)
    if batch.etag is not None:
        row.etag = _fitting(name, "etag", batch.etag, None)
    if batch.last_modified is not None:
        row.last_modified = _fitting(name, "last_modified", batch.last_modified, None)
    if batch.data:
        row.data = {**row.data, **batch.data}  # a new dict: JSON columns track reassignment
    row.last_polled_at = started
    row.last_success_at = utcnow()
    row.error_count = 0
    row.last_error = None


async def save_failure(*, session: AsyncSession, name: str, error: str, started: datetime) -> None:
    """A poll that failed: counted, with its error, for `papertide status`."""
    row = await _state_row(session, name)
    row.last_polled_at = started
    row.error_count += 1
    row.last_error = error
    row.data = {**row.data, "poll_finished_at": utcnow().isoformat()}


def _fitting(name: str, field: str, value: str, otherwise: str | None) -> str | None:
    if len(value) <= _LIMITS[field]:
        return value
    log.warning("state.too_long", extra={"source": name, "field": field, "chars": len(value)})
    return otherwise


async def start_poll(*, session: AsyncSession, name: str, started: datetime) -> None:
    """Mark a poll as running (committed at once, so `status` sees a poll that hangs)."""
    row = await _state_row(session, name)
    row.data = {**row.data, "poll_started_at": started.isoformat()}


async def finish_poll(*, session: AsyncSession, name: str) -> None:
    """Mark the running poll as ended (a failure ends it in `save_failure`)."""
    row = await _state_row(session, name)
    row.data = {**row.data, "poll_finished_at": utcnow().isoformat()}
