"""Migration 0006_reach: long Apprise/webhook URLs fit `target.address` on both stores."""

from __future__ import annotations

from sqlalchemy import create_engine, text

from bot.store.engine import driver_urls
from bot.store.migrate import current_revision, upgrade_sync


def test_upgrade_keeps_rows_and_widens_the_address(db_url: str) -> None:
    # db_url is migrated to head already: step back, add a row, step forward again.
    from alembic import command

    from bot.store.migrate import alembic_config

    command.downgrade(alembic_config(db_url), "0001")
    engine = create_engine(driver_urls(db_url)[1])
    try:
        with engine.begin() as conn:
            conn.execute(text(
                "INSERT INTO target (platform, kind, workspace, address, settings, "
                "failure_count, created_at) VALUES ('webhook', 'channel', '', "
                "'https://hooks.example.org/a', '{}', 0, CURRENT_TIMESTAMP)"
            ))  # fmt: skip
        upgrade_sync(db_url, "0006_reach")
        assert current_revision(db_url) == "0006_reach"
        long_url = "ntfy://ntfy.example.org/" + "t" * 1500
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO target (platform, kind, workspace, address, settings, "
                    "failure_count, created_at) VALUES ('apprise', 'channel', '', :a, '{}', 0, "
                    "CURRENT_TIMESTAMP)"
                ),
                {"a": long_url},
            )
            got = conn.execute(text("SELECT address FROM target ORDER BY id")).scalars().all()
    finally:
        engine.dispose()
        upgrade_sync(db_url)  # back to head for the tests that share this database
    assert got == ["https://hooks.example.org/a", long_url]
