"""New `paper` rows, straight to the driver: persist's bulk INSERT (persist owns the table).

SQLAlchemy's per-row bind processing (JSON, datetimes) and its batched multi-row
`INSERT … VALUES (…), (…) RETURNING` cost more than the database's own work for a
2,000-paper batch. So the rows (built by `record_to_row`, the one mapping) are encoded
once here and written the way each driver is fastest:

- SQLite: `INSERT OR IGNORE` through `executemany`. The ingest transaction began
  IMMEDIATE (bot/store/engine.py) before persist read which ids are known, so no other
  writer can have stored one of these since: the row count says all were inserted. If
  it ever says otherwise, the rows stamped with this batch's `now` are the new ones.
- PostgreSQL: one `INSERT … SELECT FROM unnest(arrays) ON CONFLICT DO NOTHING RETURNING
  id`: one statement, one round trip, the server parses the arrays; a process that
  stored the same paper first makes it report exactly the ones inserted here. The
  arrays go in binary (`%b`): as text, psycopg quotes every element in Python, a regex
  substitution per backslash or quote (LaTeX abstracts have many), which cost five
  times the rest of the insert on the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from operator import itemgetter
from typing import Any

from sqlalchemy import JSON, select
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from bot.store.columns import UTCDateTime, json_text, sqlite_time
from bot.store.records import PAPER
from bot.timeutil import as_utc

_COLUMNS = tuple(column.name for column in PAPER.columns)
_JSON = frozenset(c.name for c in PAPER.columns if isinstance(c.type, JSON))
_TIMES = frozenset(c.name for c in PAPER.columns if isinstance(c.type, UTCDateTime))
# Positions of the columns the driver cannot take as they are (see `_sqlite_rows`).
_JSON_AT = tuple(i for i, name in enumerate(_COLUMNS) if name in _JSON)
_TIME_AT = tuple(i for i, name in enumerate(_COLUMNS) if name in _TIMES)
_VALUES = itemgetter(*_COLUMNS)
_ENCODE = json_text
_NAMES = ", ".join(_COLUMNS)
# Built from the model's own column names and types, never from input.
_MARKS = ", ".join("?" * len(_COLUMNS))
_SQLITE_INSERT = f"INSERT OR IGNORE INTO paper ({_NAMES}) VALUES ({_MARKS})"  # noqa: S608
_PG_ARRAYS = ", ".join(
    f"%b::{c.type.compile(dialect=postgresql.dialect())}[]"  # type: ignore[no-untyped-call]
    for c in PAPER.columns
)
_PG_INSERT = (
    f"INSERT INTO paper ({_NAMES}) SELECT * FROM unnest({_PG_ARRAYS}) "  # noqa: S608
    "ON CONFLICT (id) DO NOTHING RETURNING id"
)
_CHUNK = 500


def _sqlite_rows(rows: Sequence[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """The rows as the driver's parameter lists: JSON as text, times as SQLAlchemy writes
    them. A batch shares `now` and most papers' two dates: each time is formatted once."""
    times: dict[datetime, str] = {}
    out: list[tuple[Any, ...]] = []
    for row in rows:
        values = list(_VALUES(row))
        for i in _JSON_AT:
            values[i] = _ENCODE(values[i])
        for i in _TIME_AT:
            when = values[i]
            text = times.get(when)
            if text is None:
                text = times[when] = sqlite_time(when)
            values[i] = text
        out.append(tuple(values))  # SQLAlchemy takes a list of tuples as executemany
    return out


async def insert_new_papers(
    session: AsyncSession, rows: Sequence[dict[str, Any]], now: datetime
) -> list[str]:
    """Insert `rows` (from `record_to_row(record, now)`) unless their id is stored;
    returns the ids inserted by this call."""
    if not rows:
        return []
    conn = await session.connection()
    if conn.dialect.name == "postgresql":
        return await _insert_postgresql(conn, rows)
    return await _insert_sqlite(conn, rows, now)


async def _insert_sqlite(
    conn: AsyncConnection, rows: Sequence[dict[str, Any]], now: datetime
) -> list[str]:
    result = await conn.exec_driver_sql(_SQLITE_INSERT, _sqlite_rows(rows))
    ids = [row["id"] for row in rows]
    if result.rowcount == len(rows):
        return ids
    inserted: list[str] = []
    for start in range(0, len(ids), _CHUNK):
        found = await conn.execute(
            select(PAPER.c.id).where(
                PAPER.c.id.in_(ids[start : start + _CHUNK]), PAPER.c.ingested_at == now
            )
        )
        inserted += [pid for (pid,) in found]
    return inserted


async def _insert_postgresql(conn: AsyncConnection, rows: Sequence[dict[str, Any]]) -> list[str]:
    arrays = tuple(
        [_ENCODE(row[name]) for row in rows]
        if name in _JSON
        else [as_utc(row[name]) for row in rows]
        if name in _TIMES
        else [row[name] for row in rows]
        for name in _COLUMNS
    )
    result = await conn.exec_driver_sql(_PG_INSERT, arrays)
    return [pid for (pid,) in result]
