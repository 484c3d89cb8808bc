"""Alembic migrations, run programmatically (`papertide db upgrade`, and at every start)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine as create_sync_engine
from sqlalchemy.exc import OperationalError

from bot.errors import StoreError
from bot.store.engine import driver_urls

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(url: str) -> Config:
    _, sync_url = driver_urls(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    # ConfigParser interpolation: a literal % in a password must be doubled.
    config.set_main_option("sqlalchemy.url", sync_url.replace("%", "%%"))
    return config


def upgrade_sync(url: str, revision: str = "head") -> None:
    try:
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
