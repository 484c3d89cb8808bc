"""The foundation: settings, the store on both backends, the core's independence."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from bot.config import Settings
from bot.errors import ConfigError
from bot.store.engine import driver_urls
from bot.store.models import OutboxRow, Paper, Target
from tests.conftest import count_rows


def test_settings_parse_comma_lists_and_mask_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAPERTIDE_SOURCES", "arxiv-rss, feed:https://example.org/a.xml")
    monkeypatch.setenv("PAPERTIDE_SLACK_BOT_TOKEN", "xoxb-very-secret")
    monkeypatch.setenv("PAPERTIDE_DATABASE_URL", "postgresql://ann:hunter2@db:5432/pt")
    settings = Settings()
    assert settings.sources == ["arxiv-rss", "feed:https://example.org/a.xml"]
    shown = settings.effective()
    assert shown["PAPERTIDE_SLACK_BOT_TOKEN"] == "********"
    assert "hunter2" not in shown["PAPERTIDE_DATABASE_URL"]
    assert "xoxb-very-secret" not in repr(shown)


def test_driver_urls_pick_async_and_sync_drivers() -> None:
    assert driver_urls("sqlite:///subscriptions.db") == (
        "sqlite+aiosqlite:///subscriptions.db",
        "sqlite:///subscriptions.db",
    )
    assert driver_urls("postgresql://u@h:5432/db")[0] == "postgresql+psycopg://u@h:5432/db"
    with pytest.raises(ConfigError, match="PAPERTIDE_DATABASE_URL"):
        driver_urls("mysql://u@h/db")


async def test_datetimes_come_back_as_aware_utc(sessions) -> None:  # type: ignore[no-untyped-def]
    cest = timezone(timedelta(hours=2))
    async with sessions() as session:
        session.add(
            Paper(
                id="2606.01234",
                title="T",
                published=datetime(2026, 6, 30, 12, tzinfo=cest),
                updated=datetime(2026, 7, 1, tzinfo=UTC),
                categories=["cs.LG", "cs.AI"],
            )
        )
        await session.commit()
    async with sessions() as session:
        paper = (await session.execute(select(Paper))).scalar_one()
    assert paper.published == datetime(2026, 6, 30, 10, tzinfo=UTC)
    assert paper.published.tzinfo is not None
    assert paper.categories == ["cs.LG", "cs.AI"]


async def test_outbox_key_is_unique_in_the_database(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        target = Target(platform="console", kind="channel", address="demo")
        session.add(target)
        await session.flush()
        session.add(OutboxRow(key="t1:paper:2606.01234", target_id=target.id, kind="paper"))
        await session.commit()
        session.add(OutboxRow(key="t1:paper:2606.01234", target_id=target.id, kind="paper"))
        with pytest.raises(IntegrityError):
            await session.commit()
    assert await count_rows(sessions, "outbox") == 1


def test_core_never_imports_chat_or_smtp_sdks() -> None:
    # Block the SDKs, then import every core module: adapters may need them, the core may not.
    code = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'slack_bolt', 'slack_sdk', 'discord', 'aiosmtplib'}:
            raise ImportError('blocked: ' + name)
sys.meta_path.insert(0, Block())
import importlib, pkgutil, bot, digests
skip = ('bot.platforms.', 'bot.store.migrations', 'bot.cli.__main__')
for pkg in (bot, digests):
    for mod in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):
        if not mod.name.startswith(skip):
            importlib.import_module(mod.name)
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


async def test_enqueue_twice_is_a_no_op(sessions) -> None:  # type: ignore[no-untyped-def]
    from bot.outbox.queue import enqueue, message_key
    from bot.types import MessageKind

    async with sessions() as session:
        target = Target(platform="console", kind="channel", address="demo")
        session.add(target)
        await session.flush()
        assert target.id is not None
        key = message_key(target.id, MessageKind.PAPER, "2606.01234")
        first = await enqueue(
            session=session, target_id=target.id, kind=MessageKind.PAPER, key=key, payload={"n": 1}
        )
        second = await enqueue(
            session=session, target_id=target.id, kind=MessageKind.PAPER, key=key, payload={"n": 2}
        )
        await session.commit()
    assert (first, second) == (True, False)
    async with sessions() as session:
        row = (await session.execute(select(OutboxRow))).scalar_one()
    assert row.payload == {"n": 1}


async def test_sqlite_readers_read_a_snapshot_while_a_writer_holds_the_lock(
    sqlite_url: str,
) -> None:
    from sqlalchemy import func
    from sqlalchemy.exc import OperationalError

    from bot.store.models import Topic
    from bot.store.store import open_store

    async with open_store(sqlite_url, migrate=False) as store:
        assert store.read_sessions is not store.sessions
        async with store.sessions() as writer, writer.begin():
            writer.add(Topic(slug="x", name="X"))
            await writer.flush()  # BEGIN IMMEDIATE: this session holds the write lock
            # A reader needing that lock would wait out the busy timeout and fail here.
            async with store.read_sessions() as reader:
                seen = (await reader.execute(select(func.count()).select_from(Topic))).scalar()
            assert seen == 0  # the snapshot from before the writer's uncommitted row
        async with store.read_sessions() as reader:
            reader.add(Topic(slug="y", name="Y"))
            with pytest.raises(OperationalError, match=r"readonly|read-only|query_only"):
                await reader.commit()


def test_log_lines_carry_their_structured_fields() -> None:
    import logging

    from bot.logs import KeyValueFormatter

    record = logging.makeLogRecord(
        {"msg": "poll.done", "levelname": "INFO", "name": "bot.poll", "source": "arxiv", "new": 12}
    )
    line = KeyValueFormatter("%(levelname)s %(name)s %(message)s").format(record)
    assert line == "INFO bot.poll poll.done source=arxiv new=12"


def test_config_prints_values_literally_even_when_they_look_like_markup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from typer.testing import CliRunner

    from bot.cli import app

    monkeypatch.setenv("PAPERTIDE_USER_AGENT", "lab [bold]bot[/bold] [/oops]")
    result = CliRunner().invoke(app, ["config"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "lab [bold]bot[/bold] [/oops]" in result.output
