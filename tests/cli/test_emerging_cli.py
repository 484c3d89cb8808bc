"""`papertide topics emerging [--json]` and `papertide topics add` through the real CLI on
real SQLite and PostgreSQL stores: a planted burst is found, and one command turns the
suggestion into a catalog topic with its papers filed."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
from pathlib import Path

from sqlalchemy import select
from sqlmodel import col
from typer.testing import CliRunner, Result

from bot.catalog.file import load_topics
from bot.catalog.momentum import digest_as_of, last_complete_week
from bot.cli import app
from bot.store.engine import create_engine, session_factory
from bot.store.migrate import upgrade
from bot.store.models import PaperTopic, Topic
from bot.timeutil import utcnow
from tests.support.emerging_corpus import seed_burst
from tests.support.paths import REPO


async def cli(db_url: str, topics: Path, *args: str) -> Result:
    env = {"PAPERTIDE_DATABASE_URL": db_url, "PAPERTIDE_TOPICS_FILE": str(topics)}
    return await asyncio.to_thread(CliRunner().invoke, app, list(args), env=env)


async def test_emerging_json_then_add_the_suggestion(db_url: str, tmp_path: Path) -> None:
    topics = tmp_path / "topics.toml"
    shutil.copy(REPO / "bot" / "data" / "topics.toml", topics)
    before = {t.slug for t in load_topics(topics)}
    week = last_complete_week(utcnow())
    await upgrade(db_url)
    engine = create_engine(db_url)
    try:
        burst = await seed_burst(
            session_factory(engine), digest_as_of(week), per_week=40,
            burst_title="Test-Time Scaling {i}",
        )  # fmt: skip
        result = await cli(db_url, topics, "topics", "emerging", "--json", "--week", week)
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert set(document) == {"week", "computed_at", "complete", "papers", "phrases"}
        assert document["week"] == week
        assert document["complete"] is True
        (item,) = document["phrases"]
        assert set(item) == {
            "phrase", "words", "count", "previous", "weekly", "p_value", "papers", "query",
            "slug", "categories", "add_command", "line",
        }  # fmt: skip
        assert item["phrase"] == "test-time scaling"
        assert sorted(item["papers"]) == sorted(burst)
        assert item["previous"] == 0
        assert len(item["weekly"]) == 12
        text = await cli(db_url, topics, "topics", "emerging", "--week", week)
        assert "'test-time scaling', 8 papers this week, none in the 11 weeks before" in text.stdout
        # The suggested command, run as printed, adds the topic to the file and the store.
        words = shlex.split(item["add_command"])
        assert words[:3] == ["papertide", "topics", "add"]
        added = await cli(db_url, topics, *words[1:])
        assert added.exit_code == 0, added.output
        specs = {t.slug: t for t in load_topics(topics)}
        assert set(specs) == before | {"test-time-scaling"}
        assert specs["test-time-scaling"].query == item["query"]
        async with session_factory(engine)() as session:
            topic = (
                await session.execute(select(Topic).where(col(Topic.slug) == "test-time-scaling"))
            ).scalar_one()
            filed = set(
                (
                    await session.execute(
                        select(col(PaperTopic.paper_id)).where(col(PaperTopic.topic_id) == topic.id)
                    )
                ).scalars()
            )
        assert filed == set(burst)
        # Now a topic (8 of the week's 48 papers, not a catch-all) covers it: recomputed,
        # the phrase is no longer emerging.
        again = await cli(
            db_url, topics, "topics", "emerging", "--json", "--week", week, "--refresh"
        )
        assert json.loads(again.stdout)["phrases"] == []
        # The same slug twice, or a broken query: one line, and the file is unchanged.
        text_before = topics.read_text()
        twice = await cli(db_url, topics, *words[1:])
        assert twice.exit_code == 1
        assert "already in the catalog" in twice.output
        broken = await cli(db_url, topics, "topics", "add", "broken", "--name", "B",
                           "--query", "ti:(", "--category", "cs.LG")  # fmt: skip
        assert broken.exit_code == 1
        assert "[query]" in broken.output
        assert topics.read_text() == text_before
    finally:
        await engine.dispose()


async def test_a_bad_week_is_one_line(db_url: str, tmp_path: Path) -> None:
    topics = tmp_path / "topics.toml"
    shutil.copy(REPO / "bot" / "data" / "topics.toml", topics)
    result = await cli(db_url, topics, "topics", "emerging", "--week", "2026-W99")
    assert result.exit_code == 1
    assert "not an ISO week" in result.output
