"""A digest's "More like this" from end to end, on SQLite and PostgreSQL: the weekly
digest goes out through a real SMTP server, the signed link comes out of the received
MIME, and a headless Chromium follows it, presses the button, and undoes it."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from email import message_from_bytes, policy
from email.message import EmailMessage
from html import escape
from urllib.parse import parse_qs, urlsplit

import pytest
from playwright.async_api import Browser, Page
from sqlmodel import col, select

from bot.store.models import Paper, Person, Reaction, Target
from bot.subscriptions.optin import confirm, request_subscription
from bot.subscriptions.tokens import person_token
from digests.links import links_for
from digests.schedule import enqueue_week
from tests.support.browser import new_page
from tests.support.smtp import smtp_sink
from tests.support.web import NOW, WebEnv, deliver_mail, request_page, running_web

TOPIC = "rl-for-llm-agents"
SIGNED_OUT = "Signed out everywhere"


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


async def _subscribe(env: WebEnv, email: str, *, confirmed: bool) -> Person:
    """Double opt-in through its owner: the request, then (maybe) the confirmation."""
    async with env.sessions() as session, session.begin():
        result = await request_subscription(
            session=session, email=email, settings=env.settings, now=NOW, topic_slug=TOPIC
        )
        person = await session.get(Person, result.person_id)
        assert person is not None
        if confirmed:
            token = person_token(env.settings, person, "confirm", topic_slug=TOPIC)
            person = await confirm(session=session, token=token, settings=env.settings, now=NOW)
        return person


async def _reactions(env: WebEnv) -> list[tuple[int | None, str, int, str]]:
    """(person, paper, leaning, via) of every stored reaction."""
    async with env.sessions() as session:
        rows = await session.execute(
            select(col(Target.person_id), col(Reaction.paper_id), col(Reaction.leaning),
                   col(Reaction.via))
            .join(Target, col(Target.id) == col(Reaction.target_id))
        )  # fmt: skip
        return [(p, paper, n, v) for p, paper, n, v in rows.all()]


async def _mailed_digest(env: WebEnv) -> EmailMessage:
    """Enqueue the week's digest the `digest send` way and deliver it over real SMTP;
    the received bytes parsed by the strict policy (any defect raises)."""
    async with env.sessions() as session:
        run = await enqueue_week(
            session=session, week=None, settings=env.settings, links=links_for(env.settings),
            now=NOW,
        )  # fmt: skip
    assert run.enqueued == 1  # Ann's; Bob never confirmed
    async with smtp_sink() as (sink, port):
        await deliver_mail(env.root, port=port)
    mails = [message_from_bytes(e.original_content, policy=policy.strict) for e in sink.envelopes]
    assert all(isinstance(m, EmailMessage) for m in mails)
    digests = [m for m in mails if "more like this:" in _text(m)]  # not the confirmations
    assert len(digests) == 1
    mail = digests[0]
    assert isinstance(mail, EmailMessage)
    assert mail["To"] == "ann@lab.org"
    return mail


def _text(mail: EmailMessage | object) -> str:
    assert isinstance(mail, EmailMessage)
    part = mail.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())


def _more_link(mail: EmailMessage, public_url: str) -> str:
    """The first paper's signed "more like this" link, the same in both parts."""
    found = re.search(r"more like this: (\S+)", _text(mail))
    assert found is not None
    link = found.group(1)
    assert link.startswith(f"{public_url}/react/")
    html = mail.get_body(preferencelist=("html",))
    assert html is not None
    assert f'href="{escape(link)}"' in html.get_content()
    return link


async def _heading(page: Page) -> str:
    return await page.locator("h1").inner_text()


async def test_more_like_this_from_a_mailed_digest(web_env: WebEnv, browser: Browser) -> None:
    ann = await _subscribe(web_env, "ann@lab.org", confirmed=True)
    bob = await _subscribe(web_env, "bob@lab.org", confirmed=False)
    link = _more_link(await _mailed_digest(web_env), web_env.settings.public_url)
    assert urlsplit(link).netloc == urlsplit(web_env.base).netloc
    (paper_id,) = parse_qs(urlsplit(link).query)["paper"]
    async with web_env.sessions() as session:
        paper = await session.get(Paper, paper_id)
    assert paper is not None

    problems: list[str] = []
    page = await new_page(browser, problems)
    for _ in range(2):  # a mail scanner, then the person: a GET never records
        await page.goto(link)
        assert await _heading(page) == "More papers like this one?"
        assert await page.get_by_role("button").count() == 1
        assert f"“{paper.title}”" in await page.locator("main").inner_text()
    assert await _reactions(web_env) == []
    csrf = await page.locator("input[name=csrf]").get_attribute("value")
    assert csrf

    await page.get_by_role("button", name="More like this").click()
    await page.get_by_role("heading", name="Noted").wait_for()
    assert await _reactions(web_env) == [(ann.id, paper_id, 1, "email")]
    # The same POST replayed while the link is good (a double click, a resubmit): still
    # one reaction, not two. Refusing it would stop no one: the link mints a new form.
    parts = urlsplit(link)
    path, token = f"{parts.path}?{parts.query}", parts.path.rsplit("/", 1)[1]
    response, _ = await request_page(web_env, "POST", path, data={"csrf": csrf})
    assert response.status == 200
    assert await _reactions(web_env) == [(ann.id, paper_id, 1, "email")]

    await page.get_by_role("link", name="See all your reactions").click()
    await page.wait_for_url("**/manage/**")
    row = page.locator("#reactions tbody tr")
    assert await row.count() == 1
    assert paper.title in await row.inner_text()
    assert "more like this" in await row.inner_text()
    await row.get_by_role("button", name="Undo").click()
    await page.wait_for_url("**?saved=1#reactions")
    manage_url = page.url
    assert "No reactions yet" in await page.locator("#reactions").inner_text()
    assert await _reactions(web_env) == []

    # The form replayed against someone else's link: its token is bound to Ann's link.
    bobs = path.replace(token, person_token(web_env.settings, bob, "react"))
    response, html = await request_page(web_env, "POST", bobs, data={"csrf": csrf})
    assert response.status == 403
    assert "This form has expired" in html
    # A tampered link: one character of the signature changed. Not the last one: the
    # last base64 character of a 20-byte MAC also carries padding bits, and a change
    # there alone can decode to the very same signature (the test was flaky that way).
    at = len(token) - 5
    forged = path.replace(token, token[:at] + ("Q" if token[at] == "A" else "A") + token[at + 1 :])
    await page.goto(web_env.base + forged)
    assert await _heading(page) == "This link does not work"
    assert "damaged or was not made by us" in await page.locator("main").inner_text()
    response, html = await request_page(web_env, "POST", forged, data={"csrf": csrf})
    assert response.status == 400
    assert "damaged or was not made by us" in html
    # After "Log out everywhere" the very same POST, replayed, is refused.
    await page.goto(manage_url)
    await page.get_by_role("button", name="Log out everywhere").click()
    await page.get_by_role("heading", name=SIGNED_OUT).wait_for()
    response, html = await request_page(web_env, "POST", path, data={"csrf": csrf})
    assert response.status == 400
    assert "replaced by a newer one" in html
    assert await _reactions(web_env) == []
    assert [p for p in problems if "400" not in p] == []
