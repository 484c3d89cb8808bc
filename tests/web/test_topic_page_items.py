"""The topic page reads one statement and renders each paper once per content of its row
(issue 14): an edited paper shows at once with the page cache off, and the memo stays
bounded."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import update
from sqlmodel import col

from bot.store.models import Paper, PaperTopic, Topic
from bot.web.common import DEPS
from bot.web.paper_items import PaperItems, render_item
from bot.web.topic_data import TopicPage, read_topic_page
from tests.support.web import WebEnv, request_page, running_web


@pytest.fixture
async def uncached(db_url: str) -> AsyncIterator[WebEnv]:
    """The web app with the page cache off: every view reads the store."""
    async with running_web(db_url, page_cache_seconds=0) as env:
        yield env


def _memo(env: WebEnv) -> PaperItems:
    """The running app's memo of rendered papers."""
    assert env.app is not None
    return env.app[DEPS].items


async def _page(env: WebEnv, text: str, *, limit: int = 30) -> TopicPage | None:
    async with env.root.store.single_reads.connect() as conn:
        return await read_topic_page(conn, text=text, limit=limit)


async def test_an_edited_paper_is_rendered_afresh(uncached: WebEnv) -> None:
    _, before = await request_page(uncached, "GET", "/topics/rl-for-llm-agents")
    assert "Learning to Sell 1<" in before
    assert before.count('href="/topics/llm-agent-memory"') == 10  # 0, 3, …, 27 of 0..29
    async with uncached.sessions() as session, session.begin():
        await session.execute(
            update(Paper)
            .where(col(Paper.id) == "2609.00001")
            .values(title="Repaired <title>", abstract="New abstract.")
        )
        memory = await session.get(Topic, 2)
        assert memory is not None
        assert memory.slug == "llm-agent-memory"
        session.add(PaperTopic(paper_id="2609.00001", topic_id=memory.id))
    _, after = await request_page(uncached, "GET", "/topics/rl-for-llm-agents")
    assert "Learning to Sell 1<" not in after
    assert "Repaired &lt;title&gt;" in after
    assert "<p>New abstract.</p>" in after
    assert after.count('href="/topics/llm-agent-memory"') == 11  # the new tag, at once
    # A topic turned off disappears from every paper's tags.
    async with uncached.sessions() as session, session.begin():
        await session.execute(update(Topic).where(col(Topic.id) == 2).values(active=False))
    _, hidden = await request_page(uncached, "GET", "/topics/rl-for-llm-agents")
    assert 'href="/topics/llm-agent-memory"' not in hidden


async def test_the_memo_is_bounded_and_renders_what_a_fresh_render_would(
    uncached: WebEnv,
) -> None:
    page = await _page(uncached, "rl-for-llm-agents")
    assert page is not None
    fresh = "".join(render_item(view) for view in page.views())
    small = PaperItems(max_entries=5)
    assert small.items(page) == fresh
    assert len(small) == 5
    assert small.items(page) == fresh  # every row rendered again, still 5 kept
    assert len(small) == 5
    # Bounded by what it holds too: a collaboration paper's row carries thousands of
    # authors, which entries alone would not bound.
    one_entry = max(len(str(render_item(page.view(row)))) + sum(
        len(v) for v in row if isinstance(v, str)) for row in page.rows)  # fmt: skip
    lean = PaperItems(max_bytes=3 * one_entry)
    assert lean.items(page) == fresh
    assert 1 <= len(lean) <= 3
    assert lean.held <= 3 * one_entry
    huge = (page.rows[0][0], *page.rows[0][1:3], "[" + ",".join(['{"name": "A B"}'] * 20_000) + "]",
            *page.rows[0][4:])  # fmt: skip
    lean.items(TopicPage(page.topic, page.total, [huge], page.sqlite))
    assert len(lean) == 1  # the huge row alone, everything older dropped
    assert len(_memo(uncached)) == 0
    await request_page(uncached, "GET", "/topics/rl-for-llm-agents?page=2")
    await request_page(uncached, "GET", "/topics/rl-for-llm-agents?page=2")
    assert len(_memo(uncached)) == 10  # the second page's papers, once each


async def test_the_page_finds_topics_as_the_lookup_does(uncached: WebEnv) -> None:
    by_slug = await _page(uncached, "RL-for-LLM-agents")
    by_name = await _page(uncached, " llm agent MEMORY ")
    assert by_slug is not None
    assert by_slug.topic.slug == "rl-for-llm-agents"
    assert by_slug.total == 40
    assert len(by_slug.rows) == 30
    assert by_slug.topic.description == "RL: Reinforcement Learning"
    assert by_name is not None
    assert by_name.topic.slug == "llm-agent-memory"
    assert by_name.total == 14
    assert len(by_name.rows) == 14
    newest = by_slug.views()[0]
    assert newest.id == "2609.00000"
    assert newest.tags == (("llm-agent-memory", "LLM Agent Memory"),
                           ("rl-for-llm-agents", "RL for LLM Agents"))  # fmt: skip
    assert newest.published.tzinfo is not None
    assert await _page(uncached, "nope") is None
    async with uncached.sessions() as session, session.begin():
        session.add(Topic(slug="quiet", name="Quiet"))
        session.add(Topic(slug="gone", name="Gone", active=False))
    quiet = await _page(uncached, "quiet")
    assert quiet is not None
    assert quiet.total == 0
    assert quiet.rows == []
    assert await _page(uncached, "gone") is None
