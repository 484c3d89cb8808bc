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


# JSONB on PostgreSQL (indexable, compact), plain JSON text elsewhere.
JSONType: Any = JSON().with_variant(JSONB(), "postgresql")
