"""The leader's poll job refreshes the emerging phrases after a poll that stored papers:
the current week's, and the last ended week's once, final (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

from bot.catalog.emerging_store import read_emerging
from bot.catalog.momentum import iso_week_of, last_complete_week
from bot.config import Settings
from bot.service.root import open_papertide
from bot.timeutil import utcnow


async def test_a_poll_that_stores_papers_refreshes_emerging(db_url: str, tmp_path: Path) -> None:
    settings = Settings(
        database_url=db_url, sources=["sample"], console_out=str(tmp_path / "console.out")
    )
    async with open_papertide(settings, migrate=False) as root:
        await root.sync_catalog()
        async with root.store.sessions() as session:
            assert await read_emerging(session=session) is None
        await root._poll_job("sample")
        now = utcnow()
        async with root.store.sessions() as session:
            current = await read_emerging(session=session, week=iso_week_of(now))
            ended = await read_emerging(session=session, week=last_complete_week(now))
        assert current is not None
        assert not current.complete
        assert ended is not None
        assert ended.complete
        assert ended.papers > 0  # the bundled sample's last ended week
        # A poll that stores nothing new leaves the stored result alone.
        await root._poll_job("sample")
        async with root.store.sessions() as session:
            again = await read_emerging(session=session, week=iso_week_of(now))
        assert again is not None
        assert again.computed_at == current.computed_at
