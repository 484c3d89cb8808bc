"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Dialect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeDecorator

from bot.timeutil import as_utc


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC in, aware UTC out. SQLite keeps no offset, so we store naive UTC there."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = as_utc(value)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else as_utc(value)


def sqlite_time(value: datetime) -> str:
    """A time as UTCDateTime stores it on SQLite, for writers that bypass SQLAlchemy's
    bind processing: naive UTC text with microseconds always (`%Y-%m-%d %H:%M:%S.%f`),
    written by isoformat, which is several times cheaper than strftime."""
    return as_utc(value).replace(tzinfo=None).isoformat(" ", "microseconds")


# JSONB on PostgreSQL (indexable, compact), plain JSON text elsewhere.
JSONType: Any = JSON().with_variant(JSONB(), "postgresql")
