"""One bad entry never stops a source, and one failing source never stops the poll.

Each case used to abort the whole poll with a traceback (and on PostgreSQL roll back
the whole batch): an out-of-range date offset, a version above 2^31, a lone surrogate,
fields longer than their columns, a redirect loop, a body labelled gzip that is not.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import select

from bot.ingest.poll import run_poll
from bot.ingest.sources.arxiv_api import ArxivApiSource
from bot.ingest.sources.base import SourceContext
from bot.ingest.sources.feed import FeedSource
from bot.matching.engine import MatchEngine
from bot.store.models import Paper, SourceState
from tests.support.ingest import Canned, FakeSource, fixture, http_deps, running_source
from tests.support.ingest import source_settings as settings_for
from tests.support.paths import REPO

NOW = datetime(2026, 7, 1, tzinfo=UTC)
CLI = (sys.executable, "-c", "from bot.cli import main; main()")
LONG_CATEGORY = "cs." + "X" * 97
LONG_DOI = "10.1234/" + "d" * 300


@pytest.fixture
async def server() -> AsyncIterator[FakeSource]:
    async with running_source() as fake:
        yield fake


def _entry(pid: str, *, published: str = "2026-06-29T10:00:00Z", title: str = "A title",
           extra: str = "", category: str = "cs.LG") -> str:  # fmt: skip
    return (
        f"<entry><id>http://arxiv.org/abs/{pid}</id><updated>{published}</updated>"
        f"<published>{published}</published><title>{title}</title><summary>Text.</summary>"
        f"<author><name>Ada Lovelace</name></author>{extra}"
        f'<arxiv:primary_category term="{category}"/><category term="{category}"/>'
        f'<category term="cs.AI"/></entry>'
    )


def _page(entries: list[str]) -> bytes:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom"'
        ' xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"><title>ArXiv Query</title>'
        f"<opensearch:totalResults>{len(entries)}</opensearch:totalResults>"
        f"<opensearch:startIndex>0</opensearch:startIndex>{''.join(entries)}</feed>"
    ).encode()


BAD_ENTRIES = {
    # case: (entry, stored?) — each alone used to stop the whole poll
    "date offset out of range": (
        _entry("2606.00002v1", published="0001-01-01T00:00:00+05:00"), False),  # OverflowError
    "version beyond 2^31": (_entry("2606.00002v99999999999"), False),  # the 32-bit column
    "lone surrogate": (_entry("2606.00002v1", title="Lone &#xD800; surrogate"), True),
    "fields longer than their columns": (
        _entry("2606.00002v1", category=LONG_CATEGORY,
               extra=f"<arxiv:doi>{LONG_DOI}</arxiv:doi>"), True),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BAD_ENTRIES))
async def test_a_bad_api_entry_is_skipped_or_fixed_and_the_page_stored(
    case: str, db_url: str, sessions: async_sessionmaker[AsyncSession], server: FakeSource
) -> None:
    bad, stored = BAD_ENTRIES[case]
    server.script("/api/query", Canned(body=_page([_entry("2606.00001v1"), bad])))
    settings = settings_for(db_url, server)
    http = http_deps(settings)
    since = datetime(2026, 6, 28, tzinfo=UTC)
    source = ArxivApiSource(
        "arxiv", SourceContext(settings, http, ("cs.LG",)), since=since, now=NOW
    )
    try:
        result = await run_poll(
            settings=settings, sessions=sessions, source_name="arxiv", source=source,
            http=http, matcher=MatchEngine(),
        )  # fmt: skip
    finally:
        await http.client.aclose()
    assert result.error is None
    assert (result.new, result.skipped) == ((2, 0) if stored else (1, 1))
    async with sessions() as session:
        papers = {p.id: p for p in (await session.execute(select(Paper))).scalars()}
        state = await session.get(SourceState, "arxiv")
    assert set(papers) == ({"2606.00001", "2606.00002"} if stored else {"2606.00001"})
    assert state is not None
    assert (state.error_count, state.last_error) == (0, None)
    assert state.last_success_at is not None
    if case == "lone surrogate":
        assert papers["2606.00002"].title == "Lone \ufffd surrogate"
    if case == "fields longer than their columns":
        long_one = papers["2606.00002"]
        assert (long_one.categories, long_one.primary_category) == (["cs.AI"], "cs.AI")
        assert long_one.doi is None  # refused, not cut: a cut DOI names another paper


async def _poll_feed(db_url: str, sessions, server: FakeSource, body: bytes,  # type: ignore[no-untyped-def]
                     headers: dict[str, str]):  # fmt: skip
    server.script("/feed.xml", Canned(body=body, headers=headers))
    settings = settings_for(db_url, server)
    http = http_deps(settings)
    name = f"feed:{server.url('/feed.xml')}"
    try:
        result = await run_poll(
            settings=settings, sessions=sessions, source_name=name, http=http,
            source=FeedSource(name, SourceContext(settings, http, ())), matcher=MatchEngine(),
        )  # fmt: skip
    finally:
        await http.client.aclose()
    async with sessions() as session:
        titles = set((await session.execute(select(Paper.title))).scalars())
        state = await session.get(SourceState, name)
    assert state is not None
    return result, titles, state


async def test_a_feed_entry_with_a_lone_surrogate_is_stored_with_a_replacement_character(
    db_url: str, sessions: async_sessionmaker[AsyncSession], server: FakeSource
) -> None:
    body = fixture("feed_atom.xml").replace(b"A lab news item", b"A lab &#xD800; item")
    result, titles, _ = await _poll_feed(db_url, sessions, server, body, {})
    assert (result.error, result.new) == (None, 3)
    assert "A lab \ufffd item" in titles


async def test_validators_longer_than_their_columns_are_not_kept(
    db_url: str, sessions: async_sessionmaker[AsyncSession], server: FakeSource
) -> None:
    huge = {"ETag": '"' + "e" * 1000 + '"', "Last-Modified": "x" * 500}
    result, _, state = await _poll_feed(db_url, sessions, server, fixture("feed_atom.xml"), huge)
    assert (result.error, result.new) == (None, 3)
    assert (state.etag, state.last_modified) == (None, None)  # too long to keep: refetch
    assert state.last_success_at is not None


async def test_poll_once_goes_on_after_a_failing_source(db_url: str, server: FakeSource) -> None:
    """`papertide poll --once` with two sources where the first fails polls the second."""

    async def loop(request: web.Request) -> web.Response:
        raise web.HTTPFound(location="/loop.xml")

    server.handle("/loop.xml", loop)
    server.script("/liar.xml", Canned(body=b"<feed/>", headers={"Content-Encoding": "gzip"}))
    server.script("/good.xml", Canned(body=fixture("feed_atom.xml")))
    sources = ",".join(f"feed:{server.url(p)}" for p in ("/loop.xml", "/liar.xml", "/good.xml"))
    env = {**os.environ, "PAPERTIDE_DATABASE_URL": db_url, "PAPERTIDE_SOURCES": sources,
           "PAPERTIDE_CONSOLE_OUT": os.devnull}  # fmt: skip
    poll = await asyncio.create_subprocess_exec(
        *CLI, "poll", "--once", cwd=REPO, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(poll.communicate(), 120)
    lines = out.decode().splitlines()
    assert poll.returncode == 0, (out + err).decode()
    assert "Traceback" not in err.decode()
    assert len(lines) == 3, lines
    assert "failed: " in lines[0]
    assert "too many redirects" in lines[0]
    assert "failed: " in lines[1]
    assert "body labelled gzip is not gzip" in lines[1]
    assert "read 3, new 3" in lines[2]
