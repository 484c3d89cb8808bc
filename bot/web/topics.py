"""Public, read-only pages: the topic list, a topic page, a topic's Atom feed."""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from functools import lru_cache, partial

from aiohttp import web

from bot.ask.answer import TopicRef
from bot.catalog.lookup import topic_summaries
from bot.subscriptions.urls import topic_ask_path
from bot.web.ask_pages import matching_papers
from bot.web.atom import build_feed
from bot.web.common import deps, error_page, page
from bot.web.paper_items import render_items
from bot.web.topic_data import (
    PAGE_SIZE,
    Bar,
    TopicHead,
    chart_bars,
    read_topic_page,
    week_labels,
)

MAX_PAGE = 1000


@lru_cache(maxsize=64)
def _chart(weekly: tuple[int, ...], today: date) -> tuple[list[Bar], str, str]:
    """The momentum chart's bars and axis labels: the same all day for the same counts,
    which stay the same for the momentum cache's five minutes."""
    now = datetime.combine(today, time(), UTC)
    return chart_bars(list(weekly), now), *week_labels(len(weekly) or 12, now)


def _ref(topic: TopicHead) -> TopicRef:
    return TopicRef(topic.id, topic.slug, topic.name)


def _not_found(slug: str) -> web.Response:
    return error_page(
        404, "No such topic", f"There is no topic “{slug}”. See all topics at /topics."
    )


async def show_topics(request: web.Request) -> web.Response:
    """GET /topics: every active topic with its paper count."""
    d = deps(request)
    async with d.store.read_sessions() as session:
        topics = await topic_summaries(session=session)
    return page("topics.html", topics=topics, public_url=d.settings.public_url)


async def show_topic(request: web.Request) -> web.Response:
    """GET /topics/{slug}: latest papers (or, with `?q=`, those matching a question), the
    momentum box, a 'Follow by email' form and the 'Ask about this topic' box."""
    d = deps(request)
    try:
        page_no = max(1, min(MAX_PAGE, int(request.query.get("page", "1"))))
    except ValueError:
        page_no = 1
    # Keyed by what the page depends on, never the raw query: `?x=<random>` must not
    # turn every view into a cache miss (and a database query).
    key = f"{request.path}?page={page_no}"
    if (cached := d.pages.get(key)) is not None:
        return cached
    slug = request.match_info["slug"]
    now = d.clock()
    found = await d.store.single_read(
        partial(read_topic_page, text=slug, offset=(page_no - 1) * PAGE_SIZE)
    )
    if found is None:
        return _not_found(slug)
    topic = found.topic
    query = " ".join(request.query.get("q", "").split())
    matching = await matching_papers(d, _ref(topic), query) if query else None
    # Its own session, after the page's reads: a slow aggregate never holds the store.
    momentum = await d.momentum.get(d.store.read_sessions, slug, now)
    bars, first_week, last_week = _chart(
        tuple(int(n) for n in (momentum or {}).get("weekly", [])), now.date()
    )
    response = page(
        "topic.html",
        topic=topic,
        total=found.total,
        papers_html=render_items(matching.papers) if matching else d.items.items(found),
        momentum=momentum,
        bars=bars,
        first_week=first_week,
        last_week=last_week,
        page_no=page_no,
        has_next=page_no * PAGE_SIZE < found.total,
        query=query,
        matching=matching,
        ask_url=topic_ask_path(topic.slug),
        page_url=d.urls.topic(topic.slug),
        feed_url=d.urls.topic_feed(topic.slug),
    )
    return d.pages.put(key, response)


async def show_feed(request: web.Request) -> web.Response:
    """GET /topics/{slug}.atom: the latest papers as an Atom feed."""
    d = deps(request)
    if (cached := d.pages.get(request.path)) is not None:  # a feed reads no parameter
        return cached
    slug = request.match_info["slug"]
    found = await d.store.single_read(partial(read_topic_page, text=slug))
    if found is None:
        return _not_found(slug)
    topic = found.topic
    body = build_feed(
        title=f"papertide: {topic.name}",
        feed_url=d.urls.topic_feed(topic.slug),
        page_url=d.urls.topic(topic.slug),
        papers=found.views(),
        updated=topic.updated_at,
    )
    response = web.Response(body=body, content_type="application/atom+xml", charset="utf-8")
    response.headers["Cache-Control"] = "public, max-age=300"
    return d.pages.put(request.path, response)
