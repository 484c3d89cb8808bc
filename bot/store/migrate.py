"""Alembic migrations, run programmatically (`papertide db upgrade`, and at every start).

Every process migrates at start, so on a fresh PostgreSQL the `serve` and the workers of
deploy/compose.yaml all do at the same moment. They take turns: each holds a
session-level advisory lock for the whole upgrade, and whoever comes second finds the
schema at head and has nothing to do. (Two racing upgrades used to fail with a
UniqueViolation on alembic's version table.)
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy import pool, text
from sqlalchemy.exc import OperationalError

from bot.errors import StoreError
from bot.store.engine import driver_urls

MIGRATIONS = Path(__file__).parent / "migrations"
# The full-text index is engine-specific (FTS5 or tsvector) and lives in migrations only.
_NOT_IN_MODELS = ("paper_search", "paper_fts")


def include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Autogenerate and model comparisons skip the full-text index and its own indexes."""
    table = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", None)
    return not (table is not None and str(table).startswith(_NOT_IN_MODELS))


# 'ptmigra' as a bigint; advisory locks are per database (cf. the scheduler's 'ptsched').
MIGRATION_LOCK_KEY = int.from_bytes(b"ptmigra", "big")


def alembic_config(url: str) -> Config:
    _, sync_url = driver_urls(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    config.set_main_option("sqlalchemy.url", sync_url.replace("%", "%%"))
    return config


@contextmanager
def migration_lock(sync_url: str) -> Iterator[None]:
    """On PostgreSQL, hold the migration advisory lock for the block (waiting for it);
    elsewhere nothing (SQLite serialises writers itself)."""
    if not sync_url.startswith("postgresql"):
        yield
        return
    engine = create_sync_engine(sync_url, poolclass=pool.NullPool)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            conn.commit()
            try:
                yield
            finally:
                # Closing the connection would release it too; say so explicitly.
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
                conn.commit()
    finally:
        engine.dispose()


def upgrade_sync(url: str, revision: str = "head") -> None:
    """Bring the schema to `revision`, one process at a time on PostgreSQL."""
    try:
        with migration_lock(driver_urls(url)[1]):
            command.upgrade(alembic_config(url), revision)
    except OperationalError as exc:
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise StoreError(
            f"cannot reach the database ({reason}); check PAPERTIDE_DATABASE_URL"
        ) from exc


async def upgrade(url: str, revision: str = "head") -> None:
    """Bring the schema to `revision`; safe to call at every start."""
    await asyncio.to_thread(upgrade_sync, url, revision)


def current_revision(url: str) -> str | None:
    from alembic.runtime.migration import MigrationContext

    _, sync_url = driver_urls(url)
    engine = create_sync_engine(sync_url)
    try:
        with engine.connect() as conn:
            return MigrationContext.configure(conn).get_current_revision()
    finally:
        engine.dispose()
