"""The arXiv API source against a real local server: paging, windows, retries, bad pages."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlmodel import select

from bot.ingest.http import RetryableStatus, _backoff
from bot.ingest.poll import run_backfill, run_poll
from bot.ingest.sources.arxiv_api import ArxivApiSource
from bot.ingest.sources.arxiv_atom import parse_page
from bot.ingest.sources.base import SourceContext
from bot.store.engine import create_engine, session_factory
from bot.store.models import Paper, SourceState
from tests.conftest import count_rows
from tests.support.ingest import (
    Canned,
    Entry,
    FakeSource,
    api_handler,
    atom_page,
    fixture,
    http_deps,
    running_source,
    source_settings,
)

NOW = datetime(2026, 7, 1, 12, tzinfo=UTC)


@pytest.fixture
async def server() -> AsyncIterator[FakeSource]:
    async with running_source() as fake:
        yield fake


def _entries(n: int, *, start: datetime = NOW - timedelta(days=2)) -> list[Entry]:
    return [Entry(f"2606.{10000 + i:05d}", start + timedelta(minutes=7 * i)) for i in range(n)]


def test_parse_page_reads_versions_old_ids_affiliations_and_skips_bad_entries() -> None:
    page = parse_page(fixture("api_entries.xml"), source="arxiv", url="u")
    assert page.total == 3
    echo, old = page.papers
    assert (echo.id, echo.version) == ("2606.01234", 2)
    assert echo.categories == ("cs.MA", "cs.CL", "cs.LG")  # primary first, once
    assert echo.authors[1].name == "Ayşe Çağatan"
    assert echo.authors[1].affiliations == ("Boğaziçi University", "ETH Zürich")
    assert echo.doi == "10.1234/echo.2026"
    assert echo.journal_ref == "Proc. ICML 2026"
    assert echo.links["pdf"].endswith("2606.01234v2")
    assert echo.comment == "14 pages, 3 figures"
    assert echo.published == datetime(2026, 6, 28, 9, 12, tzinfo=UTC)
    assert (old.id, old.version, old.title) == (
        "hep-th/9901001",
        1,
        r"$\mu$P for Strings: An Old-Style Identifier",
    )
    assert len(page.skipped) == 1
    assert "without a title" in page.skipped[0].reason


async def test_pages_are_followed_and_the_cursor_stored(db_url, server) -> None:
    server.handle("/api/query", api_handler(_entries(5)))
    settings = source_settings(db_url, server)
    http = http_deps(settings)
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    source = ArxivApiSource(
        "arxiv", SourceContext(settings, http, ("cs.LG",)), page_size=2, now=NOW
    )
    result = await run_poll(
        settings=settings, sessions=sessions, source_name="arxiv", source=source, http=http
    )
    assert result.error is None
    assert result.new == 5
    assert [q["start"] for q in server.hits("/api/query")] == ["0", "2", "4"]
    query = server.hits("/api/query")[0]
    assert query["sortBy"] == "submittedDate"
    assert query["max_results"] == "2"
    assert query["search_query"].startswith(
        "(cat:cs.LG) AND submittedDate:[20260628"
    )  # lookback 3 days
    async with sessions() as session:
        state = await session.get(SourceState, "arxiv")
    assert state is not None
    assert state.cursor == NOW.isoformat()
    # The next poll starts a few days before the cursor: overlap, absorbed by dedup.
    again = await run_poll(
        settings=settings, sessions=sessions, source_name="arxiv", source=source, http=http
    )
    assert again.new == 0
    assert again.unchanged == 5
    assert await count_rows(sessions, "paper") == 5
    await http.client.aclose()
    await engine.dispose()


async def test_an_empty_page_while_more_exist_is_retried(sqlite_url, server) -> None:
    entries = _entries(4)
    server.script(
        "/api/query",
        Canned(body=atom_page(entries[:2], total=4, start=0)),
        Canned(body=atom_page([], total=4, start=2)),  # arXiv hiccup: not the end
    )
    server.handle("/api/query", api_handler(entries))
    settings = source_settings(sqlite_url, server)
    engine = create_engine(sqlite_url)
    http = http_deps(settings)
    source = ArxivApiSource(
        "arxiv", SourceContext(settings, http, ("cs.LG",)), page_size=2, now=NOW
    )
    result = await run_poll(
        settings=settings, sessions=session_factory(engine), source_name="arxiv", source=source
    )
    assert result.error is None
    assert result.new == 4
    assert [q["start"] for q in server.hits("/api/query")] == ["0", "2", "2"]
    await http.client.aclose()
    await engine.dispose()


async def test_5xx_and_429_with_retry_after_then_recovery(sqlite_url, server) -> None:
    server.script(
        "/api/query",
        Canned(status=503, body=b"busy"),
        Canned(status=429, headers={"Retry-After": "7"}),
        Canned(status=502),
    )
    server.handle("/api/query", api_handler(_entries(3)))
    settings = source_settings(sqlite_url, server)
    engine = create_engine(sqlite_url)
    http = http_deps(settings)
    source = ArxivApiSource("arxiv", SourceContext(settings, http, ("cs.LG",)), now=NOW)
    result = await run_poll(
        settings=settings, sessions=session_factory(engine), source_name="arxiv", source=source
    )
    assert result.error is None
    assert result.new == 3
    assert len(server.hits("/api/query")) == 4
    assert _backoff(RetryableStatus(429, 7.0)) == 7.0  # Retry-After overrides the backoff
    assert _backoff(RetryableStatus(503, None)) is True
    await http.client.aclose()
    await engine.dispose()


async def test_a_bad_page_mid_poll_keeps_earlier_pages_and_the_cursor_behind(
    db_url, server
) -> None:
    entries = _entries(4)
    server.script(
        "/api/query",
        Canned(body=atom_page(entries[:2], total=4, start=0)),
        *[Canned(body=fixture("api_truncated.xml"))] * 1,
    )
    settings = source_settings(db_url, server)
    engine = create_engine(db_url)
    sessions = session_factory(engine)
    http = http_deps(settings)
    source = ArxivApiSource(
        "arxiv", SourceContext(settings, http, ("cs.LG",)), page_size=2, now=NOW
    )
    result = await run_poll(
        settings=settings, sessions=sessions, source_name="arxiv", source=source
    )
    assert result.new == 2
    assert result.error is not None
    assert "malformed XML" in result.error
    assert "\n" not in result.error
    async with sessions() as session:
        state = await session.get(SourceState, "arxiv")
        ids = sorted((await session.execute(select(Paper.id))).scalars())
    assert ids == ["2606.10000", "2606.10001"]
    assert state is not None
    assert state.error_count == 1
    assert state.cursor == entries[1].published.isoformat()  # not past what was stored
    await http.client.aclose()
    await engine.dispose()


async def test_backfill_splits_windows_over_the_result_cap(sqlite_url, server) -> None:
    entries = _entries(12, start=NOW - timedelta(days=13))
    entries = [
        Entry(e.id, NOW - timedelta(days=13) + timedelta(days=i)) for i, e in enumerate(entries)
    ]
    server.handle("/api/query", api_handler(entries))
    settings = source_settings(sqlite_url, server)
    engine = create_engine(sqlite_url)
    http = http_deps(settings)
    ctx = SourceContext(settings, http, ("cs.LG",))
    source = ArxivApiSource(
        "arxiv", ctx, since=NOW - timedelta(weeks=2), result_cap=5, page_size=5, now=NOW
    )
    progress: list[tuple[int, int]] = []
    result = await run_poll(
        settings=settings,
        sessions=session_factory(engine),
        source_name="arxiv",
        source=source,
        on_progress=lambda done, total: progress.append((done, total)),
    )
    assert result.error is None
    assert result.new == 12
    windows = {q["search_query"].split("submittedDate:")[1] for q in server.hits("/api/query")}
    assert len(windows) > 2  # the two-week window was split
    assert progress[-1][0] == 12
    # run_backfill goes through the same path with a date window.
    again = await run_backfill(
        settings=settings, sessions=session_factory(engine), weeks=2, http=http, now=NOW
    )
    assert again.new == 0
    assert again.unchanged == 12
    await http.client.aclose()
    await engine.dispose()
