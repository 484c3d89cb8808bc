"""Real headless Chromium against the app on loopback, mail through a real SMTP server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page
from sqlmodel import col, select

from bot.store.models import Person, Subscription, Topic
from bot.subscriptions.tokens import person_token
from tests.support.browser import new_page
from tests.support.smtp import smtp_sink
from tests.support.web import (
    WebEnv,
    count,
    deliver_mail,
    first_link,
    running_web,
)


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


async def _shot(page: Page, tmp_path: Path, name: str) -> None:
    path = tmp_path / f"{name}.png"
    await page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 1000


async def _unlabelled_fields(page: Page) -> int:
    return int(
        await page.evaluate(
            "[...document.querySelectorAll('input:not([type=hidden]), select')]"
            ".filter(e => e.labels.length === 0).length"
        )
    )


async def test_follow_confirm_and_manage_in_a_real_browser(
    web_env: WebEnv, browser: Browser, tmp_path: Path
) -> None:
    problems: list[str] = []
    page = await new_page(browser, problems)
    await page.goto(f"{web_env.base}/topics/rl-for-llm-agents")
    assert await page.locator("h1").inner_text() == "RL for LLM Agents"
    # The stylesheet applied under the CSP: the chart's bars have real heights.
    height = await page.locator(".chart .bar").evaluate_all(
        "bars => Math.max(...bars.map(b => b.getBoundingClientRect().height))"
    )
    assert height > 10
    assert await _unlabelled_fields(page) == 0
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Skip to content"
    await _shot(page, tmp_path, "topic")
    await page.screenshot(path=str(tmp_path / "topic-top.png"))  # the momentum box, at a glance

    await page.get_by_label("Your email address").fill("Ann@Lab.org")
    await page.get_by_role("button", name="Follow by email").click()
    await page.wait_for_url("**/subscribe/sent")
    assert "Check your inbox" in await page.locator("h1").inner_text()
    await _shot(page, tmp_path, "sent")

    async with smtp_sink() as (sink, port):
        sent = await deliver_mail(web_env.root, port=port)
    assert sent == 1
    assert len(sink.messages) == 1
    mail = sink.messages[0]
    assert mail["To"] == "Ann@lab.org"
    assert sink.envelopes[0].rcpt_tos == ["Ann@lab.org"]
    confirm_url = first_link(mail, "/confirm/")
    assert confirm_url.startswith(web_env.settings.public_url + "/confirm/")

    await page.goto(confirm_url)
    assert await page.locator("h1").inner_text() == "Confirm your address"
    await _shot(page, tmp_path, "confirm")
    assert await count(web_env.sessions, Person, col(Person.email_status) == "confirmed") == 0
    await page.get_by_role("button", name="Confirm and start the digest").click()
    await page.get_by_role("heading", name="You are subscribed").wait_for()
    await _shot(page, tmp_path, "confirmed")
    async with web_env.sessions() as session:
        person = (await session.execute(select(Person))).scalar_one()
    assert person.email_status == "confirmed"
    assert await count(web_env.sessions, Subscription) == 1

    await page.get_by_role("link", name="Choose topics, day, hour and time zone").click()
    await page.wait_for_url("**/manage/**")
    assert await _unlabelled_fields(page) == 0
    await _shot(page, tmp_path, "manage")
    await page.get_by_label("RL for LLM Agents").uncheck()
    await page.get_by_label("LLM Agent Memory").check()
    await page.get_by_label("Hour").select_option(label="17:00")
    await page.get_by_label("Day").select_option(label="Friday")
    await page.get_by_label("Time zone").select_option("Europe/Berlin")
    await page.get_by_role("button", name="Save").click()
    await page.wait_for_url("**?saved=1")
    assert await page.get_by_role("status").inner_text() == "Saved."
    await _shot(page, tmp_path, "manage-saved")

    async with web_env.sessions() as session:
        person = (await session.execute(select(Person))).scalar_one()
        slugs = (
            await session.execute(
                select(Topic.slug).join(Subscription, col(Subscription.topic_id) == col(Topic.id))
            )
        ).scalars()
        assert list(slugs) == ["llm-agent-memory"]
    assert (person.digest_hour, person.digest_weekday, person.timezone) == (17, 4, "Europe/Berlin")
    assert problems == []


async def test_unsubscribe_page_has_one_button_that_works(
    web_env: WebEnv, browser: Browser, tmp_path: Path
) -> None:
    async with web_env.sessions() as session, session.begin():
        person = Person(email="bob@lab.org", email_key="bob@lab.org", email_status="confirmed")
        session.add(person)
    token = person_token(web_env.settings, person, "unsubscribe")
    problems: list[str] = []
    page = await new_page(browser, problems)
    await page.goto(f"{web_env.base}/unsubscribe/{token}")
    assert await page.get_by_role("button").count() == 1
    await _shot(page, tmp_path, "unsubscribe")
    assert await count(web_env.sessions, Person, col(Person.email_status) == "confirmed") == 1
    await page.keyboard.press("Tab")  # skip link
    await page.keyboard.press("Tab")  # brand
    await page.get_by_role("button", name="Unsubscribe").focus()
    await page.keyboard.press("Enter")  # keyboard alone is enough
    await page.get_by_role("heading", name="You are unsubscribed").wait_for()
    await _shot(page, tmp_path, "unsubscribed")
    assert await count(web_env.sessions, Person, col(Person.email_status) == "unsubscribed") == 1

    await page.goto(f"{web_env.base}/confirm/{token[:-3]}xyz")
    assert await page.locator("h1").inner_text() == "This link does not work"
    await _shot(page, tmp_path, "bad-token")
    assert [p for p in problems if "400" not in p] == []
