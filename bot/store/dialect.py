"""INSERT … ON CONFLICT DO NOTHING on whichever backend a session is bound to.

Idempotent writes (outbox keys, subscriptions, matches, targets) let the database's
unique constraints decide, never a read-then-write race; both SQLite and PostgreSQL
spell it the same way through their dialect's `insert`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession


def dialect_insert(session: AsyncSession, table: Any) -> Any:
    """The backend's own INSERT construct (it has `on_conflict_do_nothing`)."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        return pg_insert(table)
    return sqlite_insert(table)


def insert_ignore(session: AsyncSession, table: Any, *index_elements: str, **values: Any) -> Any:
    """INSERT one row unless a unique constraint (on `index_elements`, or any) says it exists."""
    return (
        dialect_insert(session, table)
        .values(**values)
        .on_conflict_do_nothing(index_elements=list(index_elements) or None)
    )
