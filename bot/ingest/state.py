"""The `source_state` table's one writer: cursor, ETag, facts and errors per source.

Polling state lives in the database (miniflux-style), so a restart loses nothing; a
batch's state is saved in the transaction that stores its papers.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from bot.ingest.sources.base import Batch, StoredState
from bot.store.models import SourceState
from bot.timeutil import utcnow


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
        row.cursor = batch.cursor
    if batch.etag is not None:
        row.etag = batch.etag
    if batch.last_modified is not None:
        row.last_modified = batch.last_modified
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
