"""The web app over real HTTP on loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta

import aiohttp
import feedparser
import pytest
from sqlmodel import col, select

from bot.store.models import OutboxRow, Paper, PaperTopic, Person, Subscription, Topic
from bot.subscriptions.optin import request_subscription
from bot.subscriptions.tokens import make_form_token, make_token, person_token
from bot.web.common import SECURITY_HEADERS
from tests.support.web import METRICS_TOKEN, NOW, WebEnv, count, running_web


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


HOSTILE = 'Evil </title><script>alert(1)</script> & "quotes" \x0b]]>'


def assert_secure(response: aiohttp.ClientResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get(name) == value, name
    csp = response.headers["Content-Security-Policy"]
    assert "unsafe-inline" not in csp
    assert "frame-ancestors 'none'" in csp


async def _get(env: WebEnv, path: str, **kw: object) -> tuple[aiohttp.ClientResponse, str]:
    async with (
        aiohttp.ClientSession() as http,
        http.get(env.base + path, allow_redirects=False, **kw) as r,
    ):  # type: ignore[arg-type]
        return r, await r.text()


async def _post(env: WebEnv, path: str, data: object) -> tuple[aiohttp.ClientResponse, str]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(env.base + path, data=data, allow_redirects=False) as r,
    ):
        return r, await r.text()


async def _person(env: WebEnv, email: str = "ann@lab.org", status: str = "confirmed") -> Person:
    async with env.sessions() as session, session.begin():
        result = await request_subscription(
            session=session, email=email, settings=env.settings, now=NOW
        )
        person = await session.get(Person, result.person_id)
        assert person is not None
        person.email_status = status
    return person


async def test_every_response_carries_the_security_headers(web_env: WebEnv) -> None:
    for path in (
        "/topics",
        "/topics/rl-for-llm-agents",
        "/topics/nope",
        "/no/such/page",
        "/topics/rl-for-llm-agents.atom",
        "/healthz",
        "/metrics",
        "/static/site.css",
        "/confirm/garbage",
        "/manage/garbage",
    ):
        response, body = await _get(web_env, path)
        assert_secure(response)
        assert "Traceback" not in body
    response, _ = await _post(web_env, "/subscribe", {"email": "a@b.org\r\nBcc: x@y.org"})
    assert_secure(response)


async def test_topic_page_shows_papers_like_the_reference(web_env: WebEnv) -> None:
    response, html = await _get(web_env, "/topics/rl-for-llm-agents")
    assert response.status == 200
    assert "Latest papers" in html
    assert '<span class="count">40</span>' in html
    assert "Author 0-0, Author 0-1, Author 0-2" in html
    assert "+4" in html
    assert "University 0 · University 1 · University 2" in html
    assert "+2" in html
    assert 'href="/topics/llm-agent-memory"' in html  # topic tags
    assert "papers in the last four weeks" in html  # momentum line
    assert html.count('class="bar h') == 12
    assert 'action="/subscribe"' in html
    assert 'for="follow-email"' in html
    assert "Older papers" in html  # 40 papers, 30 a page
    _, second = await _get(web_env, "/topics/rl-for-llm-agents?page=2")
    assert "Learning to Sell 39" in second
    assert "Learning to Sell 0<" not in second
    response, html = await _get(web_env, "/topics")
    assert "RL for LLM Agents" in html
    assert "40 papers" in html


async def test_hostile_titles_are_escaped_in_the_page_and_the_feed(web_env: WebEnv) -> None:
    async with web_env.sessions() as session, session.begin():
        topic = (
            await session.execute(select(Topic).where(col(Topic.slug) == "rl-for-llm-agents"))
        ).scalar_one()
        session.add(
            Paper(
                id="2610.99999",
                title=HOSTILE,
                abstract="<b>bold</b> & co",
                authors=[{"name": "<img src=x>"}],
                published=NOW + timedelta(hours=1),
                updated=NOW + timedelta(hours=1),
                categories=["cs.AI"],
            )
        )
        await session.flush()
        session.add(PaperTopic(paper_id="2610.99999", topic_id=topic.id))
    _, html = await _get(web_env, "/topics/rl-for-llm-agents")
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;" in html
    assert "<img src=x>" not in html
    response, xml = await _get(web_env, "/topics/rl-for-llm-agents.atom")
    assert response.status == 200
    assert response.content_type == "application/atom+xml"
    feed = feedparser.parse(xml)
    assert not feed.bozo, feed.get("bozo_exception")
    assert feed.feed.title == "papertide: RL for LLM Agents"
    assert feed.feed.link == "http://127.0.0.1:{}/topics/rl-for-llm-agents".format(
        web_env.base.rsplit(":", 1)[1]
    )
    first = feed.entries[0]
    assert first.title == HOSTILE.replace("\x0b", "")  # the text survives, as text
    assert first.link == "https://arxiv.org/abs/2610.99999"
    assert "<script>" not in xml


async def test_feed_links_that_are_not_http_are_never_published(web_env: WebEnv) -> None:
    """A `javascript:` or `data:` link in the store (from before ingest refused them)."""
    async with web_env.sessions() as session, session.begin():
        topic = (
            await session.execute(select(Topic).where(col(Topic.slug) == "rl-for-llm-agents"))
        ).scalar_one()
        session.add_all([
            Paper(id="2610.99998", title="Script link", published=NOW + timedelta(hours=1),
                  updated=NOW + timedelta(hours=1), categories=["cs.AI"],
                  links={"abs": "javascript:alert(document.cookie)",
                         "pdf": "data:text/html,<script>alert(1)</script>"}),
            Paper(id="url:0f00", title="Feed-only script link", published=NOW + timedelta(hours=2),
                  updated=NOW + timedelta(hours=2), categories=["cs.AI"],
                  links={"abs": " JavaScript:alert(2)"}),
        ])  # fmt: skip
        await session.flush()
        session.add_all([PaperTopic(paper_id=pid, topic_id=topic.id)
                         for pid in ("2610.99998", "url:0f00")])  # fmt: skip
    _, html = await _get(web_env, "/topics/rl-for-llm-agents")
    _, xml = await _get(web_env, "/topics/rl-for-llm-agents.atom")
    for published in (html, xml):
        assert "Script link" in published
        assert "javascript:" not in published.lower()
        assert "data:text" not in published
    assert 'href="https://arxiv.org/abs/2610.99998"' in html  # arXiv's page instead
    entries = {e.title: e for e in feedparser.parse(xml).entries}
    assert entries["Script link"].link == "https://arxiv.org/abs/2610.99998"
    # No page to link to at all: the entry is only the topic page's anchor.
    assert entries["Feed-only script link"].id.endswith("/topics/rl-for-llm-agents#url:0f00")


async def test_unknown_pages_and_topics_are_friendly_404s(web_env: WebEnv) -> None:
    for path in ("/topics/nope", "/topics/nope.atom", "/nothing-here"):
        response, html = await _get(web_env, path)
        assert response.status == 404
        assert "/topics" in html


async def test_subscribe_refuses_header_injection_with_a_clear_message(web_env: WebEnv) -> None:
    response, html = await _post(
        web_env, "/subscribe", {"email": "a@b.org\r\nBcc: x@y.org", "topic": "rl-for-llm-agents"}
    )
    assert response.status == 400
    assert "An email address is one line" in html
    assert await count(web_env.sessions, Person) == 0
    response, _ = await _post(
        web_env, "/subscribe", {"email": "ann@lab.org", "topic": "rl-for-llm-agents"}
    )
    assert response.status == 303
    assert response.headers["Location"] == "/subscribe/sent"
    assert await count(web_env.sessions, OutboxRow) == 1


@pytest.mark.parametrize(
    "case", ["tampered", "expired", "wrong_purpose", "cross_recipient", "garbage"]
)
async def test_bad_tokens_are_400_pages_that_say_what_to_do(web_env: WebEnv, case: str) -> None:
    ann = await _person(web_env, status="pending")
    bob = await _person(web_env, email="bob@lab.org", status="pending")
    assert ann.id is not None
    assert bob.id is not None
    token = person_token(web_env.settings, ann, "confirm")
    expect = {
        "tampered": "damaged",
        "expired": "expired",
        "wrong_purpose": "not a confirm link",
        "cross_recipient": "replaced by a newer one",
        "garbage": "damaged",
    }[case]
    if case == "tampered":
        token = token[:-2] + ("AA" if token[-2:] != "AA" else "BB")
    elif case == "expired":
        web_env.clock.offset = timedelta(hours=49)
    elif case == "wrong_purpose":
        token = person_token(web_env.settings, ann, "manage")
    elif case == "cross_recipient":
        token = make_token(
            web_env.settings, person_id=bob.id, version=ann.token_version, purpose="confirm"
        )
    else:
        token = "%3Cscript%3E"
    response, html = await _get(web_env, f"/confirm/{token}")
    assert response.status == 400
    assert expect in html
    assert "Traceback" not in html
    assert "<script>" not in html
    assert await count(web_env.sessions, Person, col(Person.email_status) == "confirmed") == 0


async def test_get_unsubscribe_changes_nothing_one_click_post_unsubscribes(web_env: WebEnv) -> None:
    ann = await _person(web_env)
    assert ann.id is not None
    token = person_token(web_env.settings, ann, "unsubscribe")
    for _ in range(3):  # a mail scanner following the link, repeatedly
        response, html = await _get(web_env, f"/unsubscribe/{token}")
        assert response.status == 200
        assert html.count("<button") == 1
    assert await count(web_env.sessions, Person, col(Person.email_status) == "confirmed") == 1
    # Exactly what an RFC 8058 mail client sends.
    one_click = {"Content-Type": "application/x-www-form-urlencoded"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{web_env.base}/unsubscribe/{token}",
            data="List-Unsubscribe=One-Click",
            headers=one_click,
        ) as response,
    ):
        assert response.status == 200
        assert_secure(response)
    assert await count(web_env.sessions, Person, col(Person.email_status) == "unsubscribed") == 1
    response, _ = await _post(web_env, f"/unsubscribe/{token}", "List-Unsubscribe=One-Click")
    assert response.status == 200  # twice is fine


async def test_manage_forms_need_their_csrf_token(web_env: WebEnv) -> None:
    ann = await _person(web_env)
    assert ann.id is not None
    token = person_token(web_env.settings, ann, "manage")
    other = person_token(web_env.settings, ann, "unsubscribe")
    form = {
        "action": "save",
        "topic": "llm-agent-memory",
        "weekday": "2",
        "hour": "6",
        "timezone": "UTC",
    }
    for csrf in (
        "",
        "0" * 64,
        make_form_token(web_env.settings, bound_to=other, form="save"),
        make_form_token(web_env.settings, bound_to=token, form="delete"),
    ):
        response, html = await _post(web_env, f"/manage/{token}", {**form, "csrf": csrf})
        assert response.status == 403
        assert "Open the page again" in html
    async with web_env.sessions() as session:
        person = await session.get(Person, ann.id)
        assert person is not None
        assert person.digest_hour == 8
    good = make_form_token(web_env.settings, bound_to=token, form="save")
    response, _ = await _post(web_env, f"/manage/{token}", {**form, "csrf": good})
    assert response.status == 303
    assert await count(web_env.sessions, Subscription) == 1
    bad_tz = {**form, "timezone": "Mars/Base", "csrf": good}
    response, html = await _post(web_env, f"/manage/{token}", bad_tz)
    assert response.status == 400
    assert "Unknown time zone" in html


async def test_healthz_reports_database_and_leader(web_env: WebEnv) -> None:
    async with aiohttp.ClientSession() as http, http.get(f"{web_env.base}/healthz") as r:
        assert r.status == 200
        assert await r.json() == {"status": "ok", "database": "ok", "leader": "single-process"}
    bearer = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    async with (
        aiohttp.ClientSession() as http,
        http.get(f"{web_env.base}/metrics", headers=bearer) as r,
    ):
        body = await r.text()
    assert 'papertide_web_requests_total{method="GET",route="/healthz",status="200"}' in body


async def test_healthz_is_503_while_the_leader_is_unknown(web_env: WebEnv) -> None:
    from aiohttp.test_utils import TestClient, TestServer

    from bot.web.app import build_web_app

    async def leader() -> str:
        return "unknown"

    app = build_web_app(settings=web_env.settings, store=web_env.root.store, leader_state=leader)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        response = await client.get("/healthz")
        assert response.status == 503
        assert (await response.json())["leader"] == "unknown"
