"""`/papers who|visible|import` on a real store, and the library readers on real exports."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp import web
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.commands import run_command
from bot.config import Settings
from bot.ingest.safeurl import UnsafeUrl, fetch_limited
from bot.platforms.slack.render import render_reply
from bot.service.chat_deps import library_fetcher
from bot.store.models import Alert, Paper
from bot.subscriptions.library import LibraryError, LibraryFormat, read_library
from bot.timeutil import utcnow
from tests.support.chat import add_topics, make_ctx, make_deps
from tests.support.paths import FIXTURES
from tests.support.servers import serve

LIBRARY = FIXTURES / "library"


async def say(
    sessions: async_sessionmaker[AsyncSession], text: str, deps: object = None, **ctx: object
) -> object:
    async with sessions() as session:
        reply = await run_command(
            session=session,
            ctx=make_ctx(**ctx),
            text=text,
            deps=deps or DEPS,  # type: ignore[arg-type]
        )
        await session.commit()
    return reply


DEPS = make_deps()


async def test_who_lists_channels_and_only_visible_people_of_this_workspace(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    await add_topics(sessions)
    await say(sessions, "follow diffusion-models", channel="C1")
    await say(sessions, "follow diffusion-models", channel="C7", workspace="T2")
    await say(sessions, "follow diffusion-models me", user="U1")
    await say(sessions, "follow diffusion-models me", user="U2")
    await say(sessions, "visible on", user="U2")
    reply = await say(sessions, "who Diffusion Models", user="U3")
    rendered = render_reply(reply)  # type: ignore[arg-type]
    text = "\n".join(b["text"]["text"] for b in rendered["blocks"])
    assert "Channels: <#C1>" in text
    assert "People: <@U2>" in text
    assert "U1" not in text
    assert "C7" not in text  # another workspace's channel
    assert "visible on" in text  # U3 is told how to be listed
    await say(sessions, "visible off", user="U2")
    hidden = await say(sessions, "who diffusion-models")
    assert "nobody who shows it" in "\n".join(hidden.lines)  # type: ignore[attr-defined]
    bad = await say(sessions, "visible maybe")
    assert bad.error  # type: ignore[attr-defined]
    # A channel's own follows are on its /papers list.
    listed = await say(sessions, "list", channel="C1")
    assert "This channel follows: Diffusion Models" in "\n".join(listed.lines)  # type: ignore[attr-defined]


def test_each_real_export_is_read() -> None:
    bib = read_library((LIBRARY / "zotero_leafac.bib").read_bytes())
    csl = read_library((LIBRARY / "zotero_leafac.csl.json").read_bytes())
    ris = read_library((LIBRARY / "endnote_utf_chars.ris").read_bytes())
    assert (bib.format, len(bib.entries)) == (LibraryFormat.BIBTEX, 4)
    assert (csl.format, len(csl.entries)) == (LibraryFormat.CSL_JSON, 4)
    assert (ris.format, len(ris.entries)) == (LibraryFormat.RIS, 1)
    assert [a.full for a in bib.entries[0].authors] == [a.full for a in csl.entries[1].authors]
    assert csl.entries[1].title == "Relative Store Fragments for Singleton Abstraction"
    assert ris.entries[0].authors[0].family == "Dobrokhotova"
    assert ris.entries[0].title.startswith("Состояние")
    with pytest.raises(LibraryError):
        read_library(b"hello, this is not a library")


async def _add_papers(sessions: async_sessionmaker[AsyncSession]) -> None:
    now = utcnow()
    async with sessions() as session:
        for i, (title, authors) in enumerate([
            ("Demand driven analysis of higher order programs", ["Zachary Palmer", "A B"]),
            ("Higher order contracts", ["Scott F. Smith"]),
            ("Diffusion for images", ["C D"]),
        ]):  # fmt: skip
            session.add(Paper(id=f"2611.0000{i}", title=title, abstract="",
                              authors=[{"name": a, "affiliations": []} for a in authors],
                              categories=["cs.PL"], primary_category="cs.PL",
                              published=now - timedelta(days=3), updated=now))  # fmt: skip
        await session.commit()


@pytest.fixture
async def library_site(tmp_path: Path) -> AsyncIterator[str]:
    async def export(_request: web.Request) -> web.Response:
        return web.Response(body=(LIBRARY / "zotero_leafac.csl.json").read_bytes())

    async def huge(_request: web.Request) -> web.StreamResponse:
        return web.Response(body=b"[" + b" " * 3_000_000 + b"]")

    app = web.Application()
    app.router.add_get("/library.json", export)
    app.router.add_get("/huge.json", huge)
    async with serve(app) as base:
        yield base


async def test_import_from_a_url_proposes_and_accepts_one_by_one(
    sessions: async_sessionmaker[AsyncSession], settings: Settings, library_site: str
) -> None:
    await add_topics(sessions)
    await _add_papers(sessions)
    allowed = settings.model_copy(update={"allow_private_urls": True})
    deps = make_deps(fetch_url=library_fetcher(allowed))
    reply = await say(sessions, f"import {library_site}/library.json", deps=deps)
    lines = list(reply.lines)  # type: ignore[attr-defined]
    assert reply.title == "3 alerts proposed from 4 CSL-JSON entries"  # type: ignore[attr-defined]
    assert lines[0] == (
        '1. `au:"Zachary Palmer"` — co-author on 3 of your 4 entries · 1 papers in the last '
        "four weeks"
    )
    assert lines[1].startswith('2. `au:"Scott F Smith"`')
    # Terms common in the store's papers ("higher order" is in two) lose to rarer ones.
    assert lines[2].startswith('3. `all:"program analysis" OR')
    assert "higher order" not in lines[2]
    accepted = await say(sessions, "import accept 1", deps=deps)
    assert accepted.title.endswith('`au:"Zachary Palmer"`')  # type: ignore[attr-defined]
    again = await say(sessions, "import accept 1", deps=deps)
    assert again.title.startswith("Already accepted as alert #")  # type: ignore[attr-defined]
    missing = await say(sessions, "import accept 9", deps=deps)
    assert missing.error  # type: ignore[attr-defined]
    async with sessions() as session:
        alerts = (await session.execute(select(Alert))).scalars().all()
    assert [a.query for a in alerts] == ['au:"Zachary Palmer"']
    listed = await say(sessions, "import list", deps=deps)
    assert "(alert #" in listed.lines[0]  # type: ignore[attr-defined]
    # Internal addresses are refused unless allowed; nothing attached is one line.
    refused = await say(sessions, f"import {library_site}/library.json",
                        deps=make_deps(fetch_url=library_fetcher(settings)))  # fmt: skip
    assert refused.error  # type: ignore[attr-defined]
    assert "internal address" in refused.title  # type: ignore[attr-defined]
    nothing = await say(sessions, "import", deps=deps)
    assert "Attach your BibTeX" in nothing.title  # type: ignore[attr-defined]


async def test_fetching_is_bounded_in_size_and_time(library_site: str) -> None:
    with pytest.raises(UnsafeUrl, match="larger than 1,000,000 bytes"):
        await fetch_limited(f"{library_site}/huge.json", max_bytes=1_000_000, time_limit=10,
                            allow_private=True)  # fmt: skip
    with pytest.raises(UnsafeUrl, match="internal address"):
        await fetch_limited(f"{library_site}/library.json", max_bytes=10_000, time_limit=10,
                            allow_private=False)  # fmt: skip
    with pytest.raises(UnsafeUrl, match="only http"):
        await fetch_limited("file:///etc/passwd", max_bytes=10, time_limit=1, allow_private=True)
    data = await fetch_limited(f"{library_site}/library.json", max_bytes=10_000, time_limit=10,
                               allow_private=True)  # fmt: skip
    assert data.startswith(b"[")
