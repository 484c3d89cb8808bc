"""The topic page's ask box, the answer page and the `?q=` list, over real HTTP."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import timedelta
from urllib.parse import quote

import aiohttp
import pytest

from bot.ask.index import index_until_current
from bot.ingest.persist import ingest_batch
from bot.types import Author, PaperRecord
from tests.support.web import NOW, WebEnv, running_web

HOSTILE = '<script>alert(1)</script> "GRPO" & agents'


class IntoTopic:
    """Files every paper under the seeded RL topic, as the engine would."""

    def __init__(self, topic_id: int) -> None:
        self.topic_id = topic_id

    def match(self, paper: PaperRecord) -> list[object]:
        from bot.types import Match, MatchKind

        return [Match(paper.id, MatchKind.TOPIC, self.topic_id, ("agents",))]


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        from sqlalchemy import select

        from bot.store.models import Topic

        async with env.sessions() as session:
            rl = (
                await session.execute(select(Topic).where(Topic.slug == "rl-for-llm-agents"))
            ).scalar_one()
        records = [
            PaperRecord(
                id=f"2610.{i:05d}",
                version=1,
                title=f"GRPO agents on ALFWorld, study {i}" if i < 3 else f"Web agents {i}",
                abstract=(
                    f"We train agents with GRPO. On ALFWorld they reach {60 + i}%. {HOSTILE}"
                    if i < 3
                    else "Agents browse the web with turn-level rewards."
                ),
                authors=(Author("Yi Wu", ("Tsinghua University",)),),
                categories=("cs.LG",),
                published=NOW - timedelta(days=i),
                updated=NOW - timedelta(days=i),
                source="test",
            )
            for i in range(8)
        ]
        async with env.sessions() as session, session.begin():
            await ingest_batch(session=session, records=records, matcher=IntoTopic(int(rl.id or 0)))  # type: ignore[arg-type]
        await index_until_current(env.sessions)
        yield env


async def _get(env: WebEnv, path: str) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(env.base + path, allow_redirects=False) as r,
    ):
        return r.status, await r.text()


async def test_the_topic_page_has_ask_next_to_follow(web_env: WebEnv) -> None:
    status, html = await _get(web_env, "/topics/rl-for-llm-agents")
    assert status == 200
    assert "Follow this topic" in html
    assert "Ask about this topic" in html
    assert (
        html.index("Follow this topic")
        < html.index("Ask about this topic")
        < html.index("Momentum")
    )
    assert 'action="/topics/rl-for-llm-agents/ask"' in html
    assert 'name="q"' in html
    assert 'maxlength="300"' in html


async def test_the_answer_page_marks_words_cites_papers_and_links_to_more(web_env: WebEnv) -> None:
    question = "which papers train agents with GRPO on ALFWorld?"
    status, html = await _get(web_env, "/topics/rl-for-llm-agents/ask?q=" + quote(question))
    assert status == 200
    assert "<mark>GRPO</mark>" in html
    assert "<mark>ALFWorld</mark>" in html
    assert 'href="https://arxiv.org/abs/2610.00000"' in html
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html or "GRPO" in html
    more = re.search(r'<a href="([^"]+)">(\d+) more papers? match</a>', html)
    assert more is not None
    assert "/topics/rl-for-llm-agents?q=which+papers+train" in more.group(1)
    status, listing = await _get(web_env, more.group(1).replace(web_env.base, ""))
    assert status == 200
    assert "Papers matching “which papers train agents with GRPO on ALFWorld?”" in listing
    titles = re.findall(r'<h3><a href="[^"]+">([^<]+)</a></h3>', listing)
    assert titles[:3] == [f"GRPO agents on ALFWorld, study {i}" for i in range(3)]
    assert len(titles) == 8  # every paper mentions agents; the three GRPO ones first


@pytest.mark.parametrize(
    ("query", "status", "text"),
    [
        ("which of the", 400, "a few words that say what you look for"),
        ("agents " * 60, 400, "under 300 characters"),
        (HOSTILE, 200, "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ],
)
async def test_bad_or_hostile_questions(
    web_env: WebEnv, query: str, status: int, text: str
) -> None:
    got, html = await _get(web_env, "/topics/rl-for-llm-agents/ask?q=" + quote(query))
    assert got == status
    assert text in html
    assert "<script>alert(1)</script>" not in html


async def test_no_question_goes_back_to_the_box_and_unknown_topics_are_404(web_env: WebEnv) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(web_env.base + "/topics/rl-for-llm-agents/ask", allow_redirects=False) as r,
    ):
        assert r.status == 302
        assert r.headers["Location"] == "/topics/rl-for-llm-agents#ask"
    status, _ = await _get(web_env, "/topics/nope/ask?q=GRPO")
    assert status == 404
