"""/emerging in a real headless Chromium, over phrases the real detector found in the
store (SQLite and PostgreSQL): the phrase, its counts, its papers' links and the
suggested query are shown; hostile text in a title or a phrase stays text."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import pytest
from playwright.async_api import Browser
from sqlmodel import col, update

from bot.catalog.emerging_store import refresh_emerging, save_emerging
from bot.catalog.momentum import digest_as_of, iso_week_of
from bot.store.models import Paper
from tests.support.browser import new_page
from tests.support.emerging_corpus import BURST_WORDS, seed_burst
from tests.support.web import NOW, WebEnv, running_web

# Twenty weeks back: far from the web seed's own papers (the last twelve days).
WEEK = iso_week_of(NOW - timedelta(weeks=20))
PWNED = "window.pwned = 1"
HOSTILE_TITLE = f'Test-Time Scaling <img src=x onerror="{PWNED}"> for Agents'
HOSTILE_PHRASE = f'<img src=x onerror="{PWNED}"> & <b>scaling</b>'


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


async def test_emerging_page_shows_detected_phrases_escaped(
    web_env: WebEnv, browser: Browser
) -> None:
    as_of = digest_as_of(WEEK)
    burst_ids = await seed_burst(web_env.sessions, as_of, burst=9)
    async with web_env.sessions() as session, session.begin():
        await session.execute(
            update(Paper).where(col(Paper.id) == burst_ids[0]).values(title=HOSTILE_TITLE)
        )
    report = await refresh_emerging(
        sessions=web_env.sessions, now=as_of + timedelta(days=1), settings=web_env.settings,
        week=WEEK,
    )  # fmt: skip
    (found,) = report.phrases  # the detector found the burst and only it (not the decoy)
    assert found.words == BURST_WORDS
    # A phrase can only come from words, so the hostile one is stored through the same
    # owner, as a second item of the week: the page must not trust what it reads either.
    hostile = replace(found, phrase=HOSTILE_PHRASE, query=f"ti:{HOSTILE_PHRASE}")
    async with web_env.sessions() as session, session.begin():
        await save_emerging(session=session, report=replace(report, phrases=(found, hostile)))

    problems: list[str] = []
    page = await new_page(browser, problems)
    await page.goto(f"{web_env.base}/emerging")
    sections = page.locator("section.emerging")
    assert await sections.count() == 2
    first, second = sections.nth(0), sections.nth(1)
    assert await first.locator("h2").inner_text() == "test-time scaling 9"
    assert await first.locator(".momentum-line").inner_text() == (
        "'test-time scaling', 9 papers this week, none in the 11 weeks before."
    )
    assert await first.locator("code").first.inner_text() == (
        'ti:"test-time scaling" OR abs:"test-time scaling"'
    )
    links = first.locator("ol.papers h3 a")
    hrefs = await links.evaluate_all("as => as.map(a => a.href)")
    assert sorted(hrefs) == sorted(f"https://arxiv.org/abs/{i}" for i in burst_ids)
    titles = await links.all_inner_texts()
    assert HOSTILE_TITLE in titles  # shown literally, as text
    assert "Test-Time Scaling for 25" in titles
    # The chart's last bar is this week's nine papers, the eleven before hold none.
    labels = await first.locator(".chart .sr").all_inner_texts()
    assert labels[-1].endswith(": 9 papers")
    assert [label.split(": ")[1] for label in labels[:-1]] == ["0 papers"] * 11

    assert (await second.locator("h2").inner_text()).startswith(HOSTILE_PHRASE)
    assert HOSTILE_PHRASE in await second.locator(".momentum-line").inner_text()
    assert await second.locator("code").first.inner_text() == f"ti:{HOSTILE_PHRASE}"
    # No element came out of the hostile text, and nothing it carried ran.
    assert await page.locator("img").count() == 0
    assert await page.locator("section.emerging b").count() == 0
    assert await page.evaluate("typeof window.pwned") == "undefined"
    assert problems == []
