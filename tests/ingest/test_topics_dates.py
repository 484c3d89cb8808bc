"""Dates, arXiv's schedule, the topics catalog, and the list/status commands' JSON."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.catalog.file import TopicSpec, load_topics
from bot.catalog.sync import sync_topics
from bot.cli import app
from bot.config import DEFAULT_TOPICS_FILE
from bot.errors import TopicsFileError
from bot.ingest.announce import is_announcement_day, last_announcement, next_announcement
from bot.ingest.dates import DateParseError, parse_date
from bot.ingest.sources.arxiv_ids import find_id, split_id
from bot.store.models import Topic


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-6-30", datetime(2026, 6, 30, tzinfo=UTC)),
        ("2026-06-30T17:59:59Z", datetime(2026, 6, 30, 17, 59, 59, tzinfo=UTC)),
        ("2026-06-30T13:59:59-04:00", datetime(2026, 6, 30, 17, 59, 59, tzinfo=UTC)),
        ("2026-06-30 17:59", datetime(2026, 6, 30, 17, 59, tzinfo=UTC)),
        ("Tue, 30 Jun 2026 00:00:00 -0400", datetime(2026, 6, 30, 4, tzinfo=UTC)),
        ("Tue, 30 Jun 2026 00:00:00 GMT", datetime(2026, 6, 30, tzinfo=UTC)),
    ],
)
def test_dates_parse_tolerantly_to_utc(text: str, expected: datetime) -> None:
    assert parse_date(text) == expected
    assert parse_date(text).tzinfo is not None


@pytest.mark.parametrize("text", ["", "yesterday", "2026-13-01", "30/06/2026", "2026-06-30T25:00"])
def test_unreadable_dates_are_errors_not_guesses(text: str) -> None:
    with pytest.raises(DateParseError):
        parse_date(text)


def test_announcement_schedule_skips_friday_saturday_and_holidays() -> None:
    saturday = datetime(2026, 7, 4, 12, tzinfo=UTC)
    assert last_announcement(saturday) == datetime(2026, 7, 3, 0, tzinfo=UTC)  # Thu 20:00 EDT
    assert next_announcement(saturday) == datetime(2026, 7, 6, 0, tzinfo=UTC)  # Sun 20:00 EDT
    assert not is_announcement_day(date(2026, 7, 3))  # Friday
    assert not is_announcement_day(date(2026, 12, 24))
    winter = datetime(2026, 12, 23, 12, tzinfo=UTC)
    assert next_announcement(winter) == datetime(2026, 12, 24, 1, tzinfo=UTC)  # Wed 20:00 EST
    assert next_announcement(datetime(2026, 12, 24, 2, tzinfo=UTC)) == datetime(
        2026, 12, 28, 1, tzinfo=UTC
    )


def test_arxiv_ids_new_old_and_in_urls() -> None:
    assert split_id("2606.01234v2") == ("2606.01234", 2)
    assert split_id("hep-th/9901001v1") == ("hep-th/9901001", 1)
    assert split_id("math.GT/0309136") == ("math.GT/0309136", 1)
    assert split_id("not-an-id") is None
    assert find_id("https://arxiv.org/pdf/2606.07777v3") == ("2606.07777", 3)
    assert find_id("oai:arXiv.org:2607.00011v1") == ("2607.00011", 1)


def test_the_shipped_catalog_has_rl_for_llm_agents_and_its_related_topics() -> None:
    topics = {t.slug: t for t in load_topics(DEFAULT_TOPICS_FILE)}
    assert 18 <= len(topics) <= 25
    rl = topics["rl-for-llm-agents"]
    assert rl.name == "RL for LLM Agents"
    assert rl.categories == ("cs.LG", "cs.CL", "cs.AI", "cs.MA")
    assert {"agentic-rl", "credit-assignment-in-rl"} <= set(rl.related)
    assert all(t.query and t.categories for t in topics.values())


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ('[[topic]]\nslug = "a"\nname = "A"\ncategories = ["cs.LG"]\nquery = \n', 5, None),
        ('[[topic]]\nslug = "a"\ncategories = ["cs.LG"]\nquery = "x"\n', 1, "name"),
        ('[[topic]]\nslug = "a"\nname = "A"\ncategories = "cs.LG"\nquery = "x"\n', 4, "categories"),
        (
            '[[topic]]\nslug = "Bad Slug"\nname = "A"\ncategories = ["cs.LG"]\nquery = "x"\n',
            2,
            "slug",
        ),
        (
            '[[topic]]\nslug = "a"\nname = "A"\ncategories = ["cs.LG"]\nquery = "x"\n\n'
            '[[topic]]\nslug = "a"\nname = "B"\ncategories = ["cs.LG"]\nquery = "y"\n',
            8,
            "slug",
        ),
        (
            '[[topic]]\nslug = "a"\nname = "A"\ncategories = ["cs.LG"]\nquery = "x"\n'
            'related = ["zz"]\n',
            6,
            "related",
        ),
    ],
)
def test_a_bad_topics_file_names_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str | None
) -> None:
    path = tmp_path / "topics.toml"
    path.write_text(text)
    with pytest.raises(TopicsFileError) as caught:
        load_topics(path)
    assert caught.value.path == str(path)
    assert caught.value.line == line
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{path}:{line}")
    assert "\n" not in str(caught.value)


async def test_sync_topics_upserts_by_slug_and_deactivates_removed(sessions) -> None:
    a = TopicSpec("a", "A", ("cs.LG",), "abs:x")
    b = TopicSpec("b", "B", ("cs.AI",), "abs:y")
    async with sessions() as session, session.begin():
        first = await sync_topics(session=session, topics=[a, b])
    async with sessions() as session, session.begin():
        second = await sync_topics(
            session=session, topics=[TopicSpec("a", "A2", ("cs.LG",), "abs:x")]
        )
    async with sessions() as session, session.begin():
        again = await sync_topics(
            session=session, topics=[TopicSpec("a", "A2", ("cs.LG",), "abs:x")]
        )
    assert (first.added, second.changed, second.deactivated) == (2, 1, 1)
    assert (again.added, again.changed, again.deactivated) == (0, 0, 0)
    async with sessions() as session:
        rows = {t.slug: t for t in (await session.execute(Topic.__table__.select())).all()}
    assert rows["a"].name == "A2"
    assert rows["b"].active is False


def test_cli_lists_and_status_print_one_json_document(sqlite_url: str, monkeypatch) -> None:
    monkeypatch.setenv("PAPERTIDE_DATABASE_URL", sqlite_url)
    monkeypatch.setenv("PAPERTIDE_SOURCES", "sample,arxiv-rss")
    runner = CliRunner()
    assert runner.invoke(app, ["poll", "--once", "--source", "sample"]).exit_code == 0
    papers = json.loads(
        runner.invoke(app, ["papers", "list", "--topic", "rl-for-llm-agents", "--json"]).stdout
    )
    assert set(papers[0]) == {
        "id",
        "version",
        "title",
        "authors",
        "categories",
        "published",
        "updated",
        "topics",
        "url",
    }
    assert all("rl-for-llm-agents" in p["topics"] for p in papers)
    assert papers[0]["published"] >= papers[-1]["published"]
    limited = json.loads(runner.invoke(app, ["papers", "list", "--limit", "3", "--json"]).stdout)
    assert len(limited) == 3
    since = json.loads(
        runner.invoke(app, ["papers", "list", "--since", "2999-1-1", "--json"]).stdout
    )
    assert since == []
    topics = json.loads(runner.invoke(app, ["topics", "list", "--json"]).stdout)
    assert {t["slug"] for t in topics} >= {"rl-for-llm-agents", "agentic-rl"}
    assert all(isinstance(t["papers"], int) for t in topics)
    status = json.loads(runner.invoke(app, ["status", "--json"]).stdout)
    by_name = {s["source"]: s for s in status}
    assert by_name["sample"]["last_poll"] is not None
    assert by_name["arxiv-rss"]["last_poll"] is None
    assert by_name["arxiv-rss"]["next_expected_announcement"]
    bad = runner.invoke(app, ["papers", "list", "--since", "soon"])
    assert bad.exit_code == 1
    assert "unreadable date" in bad.output
