"""The engine against the store: loading topics and alerts, trying a query on the
papers of the last weeks (SQLite and PostgreSQL), and the `papertide query` CLI."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from typer.testing import CliRunner

from bot.cli import app
from bot.errors import QueryError
from bot.matching import trial as matching
from bot.store.engine import create_engine, session_factory
from bot.store.models import Alert, Paper, Target, Topic
from bot.store.records import PAPER, record_from_row
from bot.timeutil import utcnow
from bot.types import MatchKind

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)


def stored_paper(
    pid: str, title: str, days_ago: float, now: datetime = NOW, **extra: object
) -> Paper:
    when = now - timedelta(days=days_ago)
    return Paper(
        id=pid,
        title=title,
        abstract=str(extra.pop("abstract", "")),
        authors=list(extra.pop("authors", [{"name": "Yi Wu", "affiliations": ["Tsinghua"]}])),  # type: ignore[call-overload]
        categories=list(extra.pop("categories", ["cs.LG", "cs.AI"])),  # type: ignore[call-overload]
        published=when,
        updated=when,
    )


async def add_papers(sessions: async_sessionmaker[AsyncSession], now: datetime = NOW) -> None:
    async with sessions() as session:
        session.add_all(
            [
                stored_paper("2606.00001", "GRPO for agents", 1, now),
                stored_paper("2606.00002", "More GRPO", 3, now, categories=["cs.CV"]),
                stored_paper("2606.00003", "GRPO again", 10, now, authors=[{"name": "Wei Chen"}]),
                stored_paper("2605.00004", "Old GRPO", 40, now),
                stored_paper("2606.00005", "Nothing relevant: URL", 2, now),
            ]
        )
        await session.commit()


async def test_test_query_counts_the_window_and_shows_the_newest(sessions) -> None:  # type: ignore[no-untyped-def]
    await add_papers(sessions)
    async with sessions() as session:
        trial = await matching.test_query(session=session, expr="ti:grpo", now=NOW, limit=2)
    assert trial.query == "ti:grpo"
    assert (trial.count, trial.scanned, trial.weeks) == (3, 4, 4)
    assert [hit.paper["id"] for hit in trial.hits] == ["2606.00001", "2606.00002"]
    assert trial.hits[0].terms == ("grpo",)

    async with sessions() as session:
        wider = await matching.test_query(session=session, expr="ti:GRPO", now=NOW, weeks=8)
        narrow = await matching.test_query(
            session=session, expr='ti:GRPO ANDNOT cat:cs.CV AND au:"Yi Wu"', now=NOW
        )
        rl = await matching.test_query(session=session, expr="RL", now=NOW)
    assert wider.count == 4
    assert [hit.paper["id"] for hit in narrow.hits] == ["2606.00001"]
    assert rl.count == 0  # URL is not RL


async def test_test_query_refuses_bad_input_with_one_line(sessions) -> None:  # type: ignore[no-untyped-def]
    async with sessions() as session:
        with pytest.raises(QueryError, match="unclosed quote at 3"):
            await matching.test_query(session=session, expr='ti:"GRPO')
        with pytest.raises(Exception, match="weeks must be between 1 and 52"):
            await matching.test_query(session=session, expr="GRPO", weeks=0)


async def test_load_engine_reads_topics_and_active_alerts(sessions) -> None:  # type: ignore[no-untyped-def]
    await add_papers(sessions)
    async with sessions() as session:
        target = Target(platform="slack", kind="user", workspace="T1", address="U1")
        session.add(target)
        await session.flush()
        assert target.id is not None
        session.add_all(
            [
                Topic(slug="grpo", name="GRPO", query="ti:GRPO", categories=["cs.LG"]),
                Topic(slug="cv", name="Vision", query="", categories=["cs.CV"]),
                Topic(slug="off", name="Off", query="ti:GRPO", active=False),
                Alert(target_id=target.id, query='au:"Yi Wu"'),
                Alert(target_id=target.id, query="ti:grpo", active=False),
                Alert(target_id=target.id, query='ti:"broken'),  # skipped, never fatal
            ]
        )
        await session.commit()
    async with sessions() as session:
        engine = await matching.load_engine(session=session)
        row = (await session.execute(select(PAPER).where(PAPER.c.id == "2606.00001"))).mappings()
        record = record_from_row(row.one())
    assert record.authors[0].name == "Yi Wu"
    assert record.authors[0].affiliations == ("Tsinghua",)
    assert record.published == NOW - timedelta(days=1)
    assert engine.stats()["queries"] == 3
    found = {(m.kind, m.terms) for m in engine.match(record)}
    assert found == {(MatchKind.TOPIC, ("GRPO", "cs.LG")), (MatchKind.ALERT, ("Yi Wu",))}


def test_cli_query_check_prints_the_tree_or_the_error() -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["query", "check", "abs:(ALFWorld OR WebShop) ANDNOT cat:cs.CV"])
    assert ok.exit_code == 0, ok.output
    assert ok.output.splitlines()[0] == "(abs:ALFWorld OR abs:WebShop) ANDNOT cat:cs.CV"
    assert "  NOT" in ok.output
    bad = runner.invoke(app, ["query", "check", 'ti:GRPO AND abs:"multi-turn'])
    assert bad.exit_code == 1
    assert "error: unclosed quote at 16" in bad.output


def test_cli_query_test_prints_json(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    async def setup() -> None:
        engine = create_engine(sqlite_url)
        try:
            await add_papers(session_factory(engine), now=utcnow())  # the CLI uses the clock
        finally:
            await engine.dispose()

    asyncio.run(setup())
    monkeypatch.setenv("PAPERTIDE_DATABASE_URL", sqlite_url)
    result = CliRunner().invoke(app, ["query", "test", "ti:GRPO", "--json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert (document["query"], document["count"], document["weeks"]) == ("ti:GRPO", 3, 4)
    assert [p["id"] for p in document["papers"]] == ["2606.00001", "2606.00002", "2606.00003"]
    assert document["papers"][0]["terms"] == ["GRPO"]
    assert document["papers"][0]["title"] == "GRPO for agents"


def test_cli_query_check_shows_the_explicit_or_and_the_hint() -> None:
    result = CliRunner().invoke(app, ["query", "check", "ti:(space time)"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "ti:space OR ti:time"
    assert "hint: as on arXiv, words side by side mean OR; write AND to require both" in lines
    explicit = CliRunner().invoke(app, ["query", "check", "ti:space AND ti:time"])
    assert "hint:" not in explicit.output


def test_cli_query_test_reads_the_range_of_submitted_date(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def setup() -> None:
        engine = create_engine(sqlite_url)
        try:
            await add_papers(session_factory(engine))  # dated before NOW, far from the clock
        finally:
            await engine.dispose()

    asyncio.run(setup())
    monkeypatch.setenv("PAPERTIDE_DATABASE_URL", sqlite_url)
    expr = "ti:GRPO AND submittedDate:[20260620 TO 20260630]"
    result = CliRunner().invoke(app, ["query", "test", expr])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0] == (
        "3 of 4 papers submitted 2026-06-20..2026-06-30 match "
        "ti:GRPO AND submittedDate:[202606200000 TO 202606302359]"
    )
    since = CliRunner().invoke(app, ["query", "test", "ti:grpo grpo", "--since", "2026-05-01"])
    assert since.exit_code == 0, since.output
    lines = since.output.splitlines()
    assert lines[0] == "4 of 5 papers since 2026-05-01 match ti:grpo OR all:grpo"
    assert lines[1] == "hint: as on arXiv, words side by side mean OR; write AND to require both"
