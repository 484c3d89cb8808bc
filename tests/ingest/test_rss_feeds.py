"""arXiv RSS and generic feeds against a local server: announce types, weekends, stale feeds,
conditional GETs, bad bodies, the shared arXiv limiter, and the CLI's exit code."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import select
from typer.testing import CliRunner

from bot.cli import app
from bot.ingest.persist import ingest_batch
from bot.ingest.poll import run_poll
from bot.ingest.sources.arxiv_api import ArxivApiSource
from bot.ingest.sources.arxiv_rss import ArxivRssSource
from bot.ingest.sources.base import SourceContext
from bot.ingest.status import collect_status, describe
from bot.matching.engine import MatchEngine
from bot.store.engine import create_engine, session_factory
from bot.store.models import Paper, SourceState
from bot.types import Author, PaperRecord
from tests.support.ingest import (
    Canned,
    Entry,
    FakeSource,
    api_handler,
    fixture,
    http_deps,
    running_source,
    source_settings,
)

WEDNESDAY_NIGHT = datetime(2026, 7, 1, 4, 30, tzinfo=UTC)  # after Tue 20:00 ET announcement
FRIDAY_MORNING = datetime(2026, 7, 3, 4, 30, tzinfo=UTC)  # after Thu 20:00 ET
SATURDAY = datetime(2026, 7, 4, 15, 0, tzinfo=UTC)
MONDAY_NIGHT = datetime(2026, 7, 7, 1, 0, tzinfo=UTC)  # after Sun + Mon announcements


@pytest.fixture
async def server() -> AsyncIterator[FakeSource]:
    async with running_source() as fake:
        yield fake


@pytest.fixture
async def sessions(db_url: str) -> AsyncIterator[async_sessionmaker[AsyncSession]]:
    engine = create_engine(db_url)
    yield session_factory(engine)
    await engine.dispose()


def _known(paper_id: str, title: str, cats: tuple[str, ...]) -> PaperRecord:
    when = datetime(2026, 6, 20, tzinfo=UTC)
    return PaperRecord(
        id=paper_id, version=1, title=title, abstract="Old abstract.",
        authors=(Author("Wei Zhang", ("Tsinghua University",)),), categories=cats,
        published=when, updated=when, source="arxiv",
    )  # fmt: skip


async def _poll_rss(settings, sessions, server, now):  # type: ignore[no-untyped-def]
    http = http_deps(settings)
    source = ArxivRssSource("arxiv-rss", SourceContext(settings, http, ("cs.AI", "cs.LG")), now=now)
    try:
        return await run_poll(
            settings=settings, sessions=sessions, source_name="arxiv-rss", source=source, http=http
        )
    finally:
        await http.client.aclose()


async def test_announce_types_update_known_papers_and_never_invent_new_ones(
    db_url, sessions, server
) -> None:
    async with sessions() as session, session.begin():
        await ingest_batch(
            session=session,
            records=[
                _known("2606.00400", "Old Title", ("cs.LG",)),
                _known("2606.00500", "X", ("cs.CL",)),
            ],
            matcher=MatchEngine(),
        )
    server.script(
        "/rss/cs.AI+cs.LG", Canned(body=fixture("rss_announcement.xml"), headers={"ETag": '"a1"'})
    )
    settings = source_settings(db_url, server)
    result = await _poll_rss(settings, sessions, server, WEDNESDAY_NIGHT)
    assert result.error is None
    assert result.new == 1  # only the `new` item
    assert result.ignored == 1  # replace-cross of a paper we never stored
    assert result.skipped == 1  # the item without an id
    async with sessions() as session:
        papers = {p.id: p for p in (await session.execute(select(Paper))).scalars()}
        state = await session.get(SourceState, "arxiv-rss")
    assert set(papers) == {"2606.00400", "2606.00500", "2607.00011"}
    replaced = papers["2606.00400"]
    assert (replaced.version, replaced.title) == (2, "A Known Paper, Revised Title")
    assert replaced.abstract == "The revised abstract."
    assert replaced.authors[0]["affiliations"] == ["Tsinghua University"]  # kept
    crossed = papers["2606.00500"]
    assert crossed.categories == ["cs.CL", "cs.AI"]
    assert crossed.title == "X"  # a cross-list only adds its category
    new = papers["2607.00011"]
    assert [a["name"] for a in new.authors] == ["Aojie Yuan", "Yi Nian", "Haiyue Zhang"]
    assert new.abstract.startswith("Hallucination is the reliability bottleneck")
    assert "\n" not in new.abstract
    assert state is not None
    assert state.etag == '"a1"'
    assert state.data["highest_id"] == "2607.00011"
    assert state.data["last_announcement_size"] == 4
    assert state.data["stale"] is False


async def test_weekend_is_no_announcement_and_a_stuck_feed_is_stale(
    db_url, sessions, server
) -> None:
    settings = source_settings(db_url, server, sources=["arxiv-rss"])
    server.script(
        "/rss/cs.AI+cs.LG",
        Canned(body=fixture("rss_announcement.xml")),
        Canned(body=fixture("rss_empty.xml")),  # Saturday: arXiv announces nothing
        Canned(body=fixture("rss_announcement.xml")),  # Monday: still Tuesday's items
    )
    await _poll_rss(settings, sessions, server, FRIDAY_MORNING)
    saturday = await _poll_rss(settings, sessions, server, SATURDAY)
    assert saturday.error is None
    assert saturday.new == 0
    async with sessions() as session:
        [status] = await collect_status(session=session, names=["arxiv-rss"], now=SATURDAY)
    assert status["stale_feed"] is False
    assert status["announcement_today"] is False
    assert status["next_expected_announcement"] == "2026-07-06T00:00:00+00:00"  # Sun 20:00 ET
    assert "no announcement today" in describe(status)
    await _poll_rss(settings, sessions, server, MONDAY_NIGHT)
    async with sessions() as session:
        [status] = await collect_status(session=session, names=["arxiv-rss"], now=MONDAY_NIGHT)
    assert status["stale_feed"] is True
    assert status["last_announcement_ingested"] == "2026-07-03T00:00:00+00:00"
    assert "STALE FEED" in describe(status)


async def test_conditional_get_sends_validators_and_accepts_304(sqlite_url, server) -> None:
    engine = create_engine(sqlite_url)
    sessions = session_factory(engine)
    server.script(
        "/feed.xml",
        Canned(
            body=fixture("feed_atom.xml"),
            headers={"ETag": '"v7"', "Last-Modified": "Tue, 30 Jun 2026 12:00:00 GMT"},
        ),
        Canned(status=304),
    )
    settings = source_settings(sqlite_url, server)
    name = f"feed:{server.url('/feed.xml')}"
    first = await run_poll(settings=settings, sessions=sessions, source_name=name)
    second = await run_poll(settings=settings, sessions=sessions, source_name=name)
    headers = [h for p, _, h in server.requests if p == "/feed.xml"]
    assert "If-None-Match" not in headers[0]
    assert headers[1]["If-None-Match"] == '"v7"'
    assert headers[1]["If-Modified-Since"] == "Tue, 30 Jun 2026 12:00:00 GMT"
    assert first.new == 3
    assert first.skipped == 1  # the entry without a title
    assert second.error is None
    assert second.read == 0
    await engine.dispose()


async def test_feed_ids_prefer_arxiv_then_doi_and_join_the_arxiv_paper(
    db_url, sessions, server
) -> None:
    async with sessions() as session, session.begin():
        echo = _known("2606.01234", "ECHO", ("cs.MA",))
        from dataclasses import replace

        await ingest_batch(
            session=session,
            records=[replace(echo, doi="10.1234/echo.2026")],
            matcher=MatchEngine(),
        )
    server.script("/feed.xml", Canned(body=fixture("feed_atom.xml")))
    settings = source_settings(db_url, server)
    result = await run_poll(
        settings=settings, sessions=sessions, source_name=f"feed:{server.url('/feed.xml')}"
    )
    async with sessions() as session:
        papers = {p.id: p for p in (await session.execute(select(Paper))).scalars()}
    # The journal entry (DOI only) became the arXiv paper; no doi: duplicate.
    assert not any(pid.startswith("doi:") for pid in papers)
    assert papers["2606.07777"].version == 3
    assert papers["2606.07777"].published == datetime(2026, 6, 29, tzinfo=UTC)
    assert papers["2606.07777"].abstract == "A blog post about a preprint."
    assert any(pid.startswith("url:") for pid in papers)
    assert result.new == 2


@pytest.mark.parametrize(
    ("canned", "reason"),
    [
        (
            Canned(body=fixture("error_page.html"), headers={"Content-Type": "text/html"}),
            "HTML page",
        ),
        (Canned(body=fixture("api_truncated.xml")), "malformed XML"),
        (Canned(body=b'{"items": []}', headers={"Content-Type": "application/json"}), "unknown"),
        (Canned(body=fixture("feed_atom.xml"), delay=1.0), "timed out"),
    ],
)
async def test_bad_bodies_fail_one_source_with_one_line_and_keep_others(
    sqlite_url, server, canned, reason
) -> None:
    engine = create_engine(sqlite_url)
    sessions = session_factory(engine)
    server.script("/bad.xml", *[canned] * 5)
    settings = source_settings(sqlite_url, server, http_timeout_seconds=0.3)
    bad = await run_poll(
        settings=settings, sessions=sessions, source_name=f"feed:{server.url('/bad.xml')}"
    )
    good = await run_poll(settings=settings, sessions=sessions, source_name="sample")
    assert bad.error is not None
    assert reason in bad.error
    assert "\n" not in bad.error
    assert not bad.read_anything
    assert good.new > 400
    async with sessions() as session:
        state = await session.get(SourceState, f"feed:{server.url('/bad.xml')}")
    assert state is not None
    assert state.error_count == 1
    await engine.dispose()


async def test_all_arxiv_sources_share_one_connection_at_a_time(sqlite_url, server) -> None:
    engine = create_engine(sqlite_url)
    sessions = session_factory(engine)
    now = WEDNESDAY_NIGHT
    server.delay = 0.02
    server.handle(
        "/api/query",
        api_handler([Entry(f"2606.{20000 + i}", now.replace(hour=1)) for i in range(6)]),
    )
    server.script("/rss/cs.AI+cs.LG", *[Canned(body=fixture("rss_announcement.xml"))] * 3)
    settings = source_settings(sqlite_url, server)
    http = http_deps(settings)
    ctx = SourceContext(settings, http, ("cs.AI", "cs.LG"))
    api = ArxivApiSource("arxiv", ctx, page_size=2, now=now)
    rss = ArxivRssSource("arxiv-rss", ctx, now=now)
    results = await asyncio.gather(
        run_poll(settings=settings, sessions=sessions, source_name="arxiv", source=api, http=http),
        run_poll(
            settings=settings, sessions=sessions, source_name="arxiv-rss", source=rss, http=http
        ),
    )
    assert all(r.error is None for r in results)
    assert len(server.requests) == 4
    assert server.max_inflight == 1  # one limiter for API and RSS together
    await http.client.aclose()
    await engine.dispose()


def test_cli_poll_exits_non_zero_only_when_nothing_could_be_read(sqlite_url, monkeypatch) -> None:
    monkeypatch.setenv("PAPERTIDE_DATABASE_URL", sqlite_url)
    runner = CliRunner()
    with __import__("stamina").set_testing(True, attempts=1):
        dead = "feed:http://127.0.0.1:9/none.xml"
        both = runner.invoke(app, ["poll", "--once", "--source", dead, "--source", "sample"])
        only_dead = runner.invoke(app, ["poll", "--once", "--source", dead])
    assert both.exit_code == 0, both.output
    assert re.search(r"sample: read [1-9][0-9]*, new [1-9]", both.output), both.output
    assert only_dead.exit_code == 1
    assert "nothing could be read" in only_dead.output
    assert only_dead.output.count("error:") == 1
