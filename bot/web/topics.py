"""Public, read-only pages: the topic list, a topic page, a topic's Atom feed."""

from __future__ import annotations

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from bot.catalog.lookup import TopicNotFound, find_topic, find_topic_counted, topic_summaries
from bot.store.models import Topic
from bot.subscriptions.urls import topic_ask_path
from bot.web.ask_pages import matching_papers
from bot.web.atom import build_feed
from bot.web.common import deps, error_page, page
from bot.web.topic_data import PAGE_SIZE, chart_bars, latest_papers, week_labels

MAX_PAGE = 1000


async def _topic(session: AsyncSession, slug: str) -> Topic | None:
    try:
        return await find_topic(session=session, text=slug)
    except TopicNotFound:
        return None


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
    async with d.store.quick_reads() as session:
        try:
            topic, total = await find_topic_counted(session=session, text=slug)
        except TopicNotFound:
            return _not_found(slug)
        assert topic.id is not None
        papers = await latest_papers(
            session=session, topic_id=topic.id, offset=(page_no - 1) * PAGE_SIZE
        )
    query = " ".join(request.query.get("q", "").split())
    matching = await matching_papers(d, topic, query) if query else None
    # Its own session, after the page's reads: a slow aggregate never holds the store.
    momentum = await d.momentum.get(d.store.read_sessions, slug, now)
    weekly = [int(n) for n in (momentum or {}).get("weekly", [])]
    first_week, last_week = week_labels(len(weekly) or 12, now)
    response = page(
        "topic.html",
        topic=topic,
        total=total,
        papers=papers,
        momentum=momentum,
        bars=chart_bars(weekly, now),
        first_week=first_week,
        last_week=last_week,
        page_no=page_no,
        has_next=page_no * PAGE_SIZE < total,
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
    async with d.store.quick_reads() as session:
        topic = await _topic(session, slug)
        if topic is None or topic.id is None:
            return _not_found(slug)
        papers = await latest_papers(session=session, topic_id=topic.id)
    body = build_feed(
        title=f"papertide: {topic.name}",
        feed_url=d.urls.topic_feed(topic.slug),
        page_url=d.urls.topic(topic.slug),
        papers=papers,
        updated=topic.updated_at,
    )
    response = web.Response(body=body, content_type="application/atom+xml", charset="utf-8")
    response.headers["Cache-Control"] = "public, max-age=300"
    return d.pages.put(request.path, response)
