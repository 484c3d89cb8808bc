"""Test support for ingest: a real aiohttp server standing in for arXiv and feeds.

Routes are scripted per path (a queue of canned responses) or served by a handler
(e.g. paged API results built in arXiv's recorded Atom format).
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import stamina
from aiohttp import web

from bot.config import Settings
from bot.ingest.http import HttpDeps, build_http
from tests.support.paths import FIXTURES as FIXTURES_DIR

FIXTURES = FIXTURES_DIR / "arxiv"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@dataclass
class Canned:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


class FakeSource:
    """A real HTTP server on 127.0.0.1 (port 0) that records every request."""

    def __init__(self) -> None:
        self.scripts: dict[str, deque[Canned]] = {}
        self.handlers: dict[str, Handler] = {}
        self.requests: list[tuple[str, dict[str, str], dict[str, str]]] = []
        self.inflight = 0
        self.max_inflight = 0
        self.delay = 0.0
        self._runner: web.AppRunner | None = None
        self.base = ""

    def script(self, path: str, *responses: Canned) -> None:
        self.scripts.setdefault(path, deque()).extend(responses)

    def handle(self, path: str, handler: Handler) -> None:
        self.handlers[path] = handler

    def url(self, path: str) -> str:
        return self.base + path

    def hits(self, path: str) -> list[dict[str, str]]:
        return [q for p, q, _ in self.requests if p == path]

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        self.requests.append((request.path, dict(request.query), dict(request.headers)))
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            queue = self.scripts.get(request.path)
            if queue:
                canned = queue.popleft()
                if canned.delay:
                    await asyncio.sleep(canned.delay)
                return web.Response(status=canned.status, body=canned.body, headers=canned.headers)
            if request.path in self.handlers:
                return await self.handlers[request.path](request)
            return web.Response(status=404, text="not found")
        finally:
            self.inflight -= 1

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


@asynccontextmanager
async def running_source() -> AsyncIterator[FakeSource]:
    """A started FakeSource, stopped on exit; with stamina's sleeps switched off."""
    fake = FakeSource()
    await fake.start()
    try:
        # stamina's testing switch: the same attempts, no backoff sleeps.
        with stamina.set_testing(True, attempts=5):
            yield fake
    finally:
        await fake.stop()


def source_settings(db_url: str, fake: FakeSource, **extra: Any) -> Settings:
    values: dict[str, Any] = {
        "database_url": db_url,
        "arxiv_api_url": fake.url("/api/query"),
        "arxiv_rss_url": fake.url("/rss/"),
        "arxiv_delay_seconds": 0.0,
        "arxiv_categories": ["cs.AI", "cs.LG"],
        "http_timeout_seconds": 2.0,
    }
    return Settings(**(values | extra))


def http_deps(settings: Settings) -> HttpDeps:
    """The production HTTP deps (client, shared limiter, caps) for `settings`."""
    return build_http(settings)


@dataclass(frozen=True)
class Entry:
    id: str
    published: datetime
    version: int = 1
    title: str = "A Paper"
    categories: tuple[str, ...] = ("cs.LG",)


def atom_entry(e: Entry) -> str:
    cats = "".join(
        f'<category term="{c}" scheme="http://arxiv.org/schemas/atom"/>' for c in e.categories
    )
    when = e.published.strftime("%Y-%m-%dT%H:%M:%SZ")
    return (
        f"<entry><id>http://arxiv.org/abs/{e.id}v{e.version}</id><updated>{when}</updated>"
        f"<published>{when}</published><title>{e.title}</title>"
        f"<summary>Reinforcement learning for agents, paper {e.id}.</summary>"
        "<author><name>Yi Wu</name>"
        "<arxiv:affiliation>Tsinghua University</arxiv:affiliation></author>"
        f'<link href="http://arxiv.org/abs/{e.id}v{e.version}" rel="alternate" type="text/html"/>'
        f'<arxiv:primary_category term="{e.categories[0]}" scheme="http://arxiv.org/schemas/atom"/>'
        f"{cats}</entry>"
    )


def atom_page(entries: list[Entry], *, total: int, start: int) -> bytes:
    return feed_page([atom_entry(e) for e in entries], total=total, start=start)


def feed_page(entries: list[str], *, total: int, start: int) -> bytes:
    """An arXiv API page around already rendered `<entry>` elements."""
    body = "".join(entries)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>'
        '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:arxiv="http://arxiv.org/schemas/atom"'
        ' xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
        "<title>ArXiv Query</title><id>http://arxiv.org/api/x</id>"
        f"<opensearch:totalResults>{total}</opensearch:totalResults>"
        f"<opensearch:startIndex>{start}</opensearch:startIndex>"
        f"<opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>"
        f"{body}</feed>"
    ).encode()


_RANGE = re.compile(r"submittedDate:\[(\d{12}) TO (\d{12})\]")


def api_handler(entries: list[Entry]) -> Handler:
    """Serve `entries` like the arXiv API: filtered by date window, sorted, paged."""

    async def handler(request: web.Request) -> web.Response:
        found = _RANGE.search(request.query.get("search_query", ""))
        assert found, request.query
        lo, hi = (datetime.strptime(g, "%Y%m%d%H%M").replace(tzinfo=UTC) for g in found.groups())
        hits = sorted((e for e in entries if lo <= e.published <= hi), key=lambda e: e.published)
        start = int(request.query["start"])
        size = int(request.query["max_results"])
        page = atom_page(hits[start : start + size], total=len(hits), start=start)
        return web.Response(body=page, content_type="application/atom+xml")

    return handler


def rss_item(
    paper: str,
    *,
    title: str,
    creators: str,
    announce: str = "new",
    abstract: str = "An abstract.",
    categories: tuple[str, ...] = ("cs.LG",),
    pub_date: str = "Wed, 01 Jul 2026 00:00:00 -0400",
    extra: str = "",
) -> str:
    """One <item> exactly as arXiv/arxiv-feed writes it (`paper` is `id` + `v` + version)."""
    arxiv_id = paper.rsplit("v", 1)[0]
    cats = "".join(f"<category>{c}</category>" for c in categories)
    return (
        f"<item><title>{title}</title><link>https://arxiv.org/abs/{arxiv_id}</link>"
        f"<description>arXiv:{paper} Announce Type: {announce} \nAbstract: {abstract}</description>"
        f'<guid isPermaLink="false">oai:arXiv.org:{paper}</guid>{cats}<pubDate>{pub_date}</pubDate>'
        f"<arxiv:announce_type>{announce}</arxiv:announce_type>"
        f"<dc:rights>http://creativecommons.org/licenses/by/4.0/</dc:rights>{extra}"
        f"<dc:creator>{creators}</dc:creator></item>"
    )


def rss_feed(items: list[str], *, categories: str = "cs.LG") -> bytes:
    """An announcement feed around `items`, with the channel rss.arxiv.org serves."""
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<rss xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/"'
        ' xmlns:atom="http://www.w3.org/2005/Atom"'
        ' xmlns:content="http://purl.org/rss/1.0/modules/content/" version="2.0"><channel>'
        f"<title>{categories} updates on arXiv.org</title>"
        f"<link>http://rss.arxiv.org/rss/{categories}</link>"
        f"<description>{categories} updates on the arXiv.org e-print archive.</description>"
        "<language>en-us</language><managingEditor>rss-help@arxiv.org</managingEditor>"
        f"{''.join(items)}</channel></rss>"
    ).encode()
