"""GET /emerging over real HTTP on SQLite and PostgreSQL: stored phrases with their
papers, escaped, linked from the topic index."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime

import aiohttp
import pytest

from bot.catalog.emerging import Emerging
from bot.catalog.emerging_store import EmergingReport, save_emerging
from tests.support.web import WebEnv, running_web

HOSTILE = '<script>alert(1)</script> & "scaling"'


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


async def _get(env: WebEnv, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(env.base + path) as response:
        return response.status, await response.text()


def _item(phrase: str, papers: tuple[str, ...]) -> Emerging:
    return Emerging(
        phrase=phrase, words=("x",), count=len(papers), previous=0,
        weekly=(0,) * 11 + (len(papers),), p_value=1e-9, papers=papers,
        query='ti:"x" OR abs:"x"', slug="x", categories=("cs.CL",),
    )  # fmt: skip


async def test_the_page_lists_each_phrase_with_its_papers_escaped(web_env: WebEnv) -> None:
    papers = ("2609.00000", "2609.00001", "2609.00002")
    report = EmergingReport(
        "2026-W47", datetime(2026, 11, 20, tzinfo=UTC), False, 40, (_item(HOSTILE, papers),)
    )
    async with web_env.sessions() as session, session.begin():
        await save_emerging(session=session, report=report)
    status, body = await _get(web_env, "/emerging")
    assert status == 200
    assert "<script>alert(1)</script>" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;scaling&#34;" in body
    assert "none in the 11 weeks before" in body
    for title in ("Learning to Sell 0", "Learning to Sell 1", "Learning to Sell 2"):
        assert title in body
    assert "Learning to Sell 3<" not in body  # not one of the phrase's papers
    assert "papertide topics add x --name" in body  # the one command that makes it a topic
    status, topics = await _get(web_env, "/topics")
    assert status == 200
    assert 'href="/emerging"' in topics


async def test_nothing_stored_yet_and_a_bad_week(web_env: WebEnv) -> None:
    status, body = await _get(web_env, "/emerging")
    assert status == 200
    assert "Nothing computed yet" in body
    status, body = await _get(web_env, "/emerging?week=2026-W99")
    assert status == 400
    assert "not an ISO week" in body
