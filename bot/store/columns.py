"""Column types that behave the same on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
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


def _json_writer() -> Callable[[Any], str]:
    # json.dumps with its defaults writes what the JSON columns store; its C encoder is
    # built once here instead of on every call (json.dumps builds one per value, a
    # microsecond each, three JSON columns per paper). Without a circular-reference
    # check, which changes no output: our values are trees.
    plain = json.JSONEncoder()
    if c_make_encoder is None:  # a Python without the C accelerator
        return plain.encode
    one_shot = c_make_encoder(
        None, plain.default, encode_basestring_ascii, None, ": ", ", ", False, False, True
    )

    def write(value: Any) -> str:
        if isinstance(value, str):
            return encode_basestring_ascii(value)
        return "".join(one_shot(value, 0))

    return write


json_text = _json_writer()
"""A value as the JSON columns store it: json.dumps's text, for writers that bypass
SQLAlchemy's bind processing."""


# JSONB on PostgreSQL (indexable, compact), plain JSON text elsewhere.
JSONType: Any = JSON().with_variant(JSONB(), "postgresql")
