"""The web app under attack (issue 12): link scanners, old links, revoked links, floods,
undecodable forms, a public /metrics, version headers, half-sent requests, cache busting.

Over real HTTP on loopback, on SQLite and PostgreSQL; mail through the real SMTP sink.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlmodel import col, select

from bot.chat.commands import run_command
from bot.service.chat_deps import command_deps
from bot.store.models import Paper, PaperTopic, Person, Target, Topic
from bot.subscriptions.optin import request_subscription
from bot.subscriptions.tokens import make_form_token, person_token
from bot.web.app import build_web_app, serve_web
from tests.support.chat import make_ctx
from tests.support.smtp import smtp_sink
from tests.support.web import (
    METRICS_TOKEN,
    NOW,
    WebEnv,
    count,
    deliver_mail,
    first_link,
    request_page,
    running_web,
)


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


async def _status(env: WebEnv, email: str = "ann@lab.org") -> str | None:
    async with env.sessions() as session:
        person = (
            await session.execute(select(Person).where(col(Person.email) == email))
        ).scalar_one_or_none()
    return person.email_status if person is not None else None


async def _mailed_link(env: WebEnv, path: str) -> str:
    """Deliver what is queued through the real SMTP sink; the `path` link of the last mail."""
    async with smtp_sink() as (sink, port):
        await deliver_mail(env.root, port=port)
    assert sink.messages, "nothing was mailed"
    return first_link(sink.messages[-1], path).removeprefix(env.base)


async def test_confirm_links_act_only_on_the_pages_post(web_env: WebEnv) -> None:
    response, _ = await request_page(web_env, "POST", "/subscribe", data={"email": "ann@lab.org"})
    assert response.status == 303
    confirm = await _mailed_link(web_env, "/confirm/")
    for method in ("GET", "HEAD", "GET"):  # a mail scanner fetching the link, repeatedly
        response, html = await request_page(web_env, method, confirm)
        assert response.status == 200
        assert await _status(web_env) == "pending"
    assert html.count("<button") == 1
    assert 'method="post"' in html
    response, html = await request_page(web_env, "POST", confirm)
    assert response.status == 200
    assert "You are subscribed" in html
    assert await _status(web_env) == "confirmed"


async def test_an_old_confirm_link_never_undoes_an_unsubscribe(web_env: WebEnv) -> None:
    await request_page(web_env, "POST", "/subscribe", data={"email": "ann@lab.org"})
    old_confirm = await _mailed_link(web_env, "/confirm/")
    await request_page(web_env, "POST", old_confirm)
    async with web_env.sessions() as session:
        ann = (await session.execute(select(Person))).scalar_one()
    unsubscribe = f"/unsubscribe/{person_token(web_env.settings, ann, 'unsubscribe')}"
    response, _ = await request_page(
        web_env, "POST", unsubscribe, data="List-Unsubscribe=One-Click",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )  # fmt: skip
    assert response.status == 200
    assert await _status(web_env) == "unsubscribed"
    for method in ("GET", "POST"):
        response, html = await request_page(web_env, method, old_confirm)
        assert response.status == 400
        assert "replaced by a newer one" in html
    assert await _status(web_env) == "unsubscribed"
    # Coming back takes a fresh confirmation, which does reach the stopped mailbox.
    web_env.clock.offset = timedelta(hours=2)
    await request_page(web_env, "POST", "/subscribe", data={"email": "ann@lab.org"})
    fresh = await _mailed_link(web_env, "/confirm/")
    assert fresh != old_confirm
    await request_page(web_env, "POST", fresh)
    assert await _status(web_env) == "confirmed"


async def test_chat_link_page_shows_on_get_and_links_on_post(web_env: WebEnv) -> None:
    async with web_env.sessions() as session:
        reply = await run_command(
            session=session, ctx=make_ctx(user="U7", channel="D7", is_dm=True),
            text="digest bob@lab.org", deps=command_deps(web_env.settings),
        )  # fmt: skip
        await session.commit()
    assert not reply.error
    link = await _mailed_link(web_env, "/link/")
    for method in ("HEAD", "GET"):
        response, html = await request_page(web_env, method, link)
        assert response.status == 200
    assert "Slack user U7" in html
    assert await _status(web_env, "bob@lab.org") == "none"
    response, html = await request_page(web_env, "POST", link)
    assert response.status == 200
    assert "Linked" in html
    assert await _status(web_env, "bob@lab.org") == "confirmed"
    async with web_env.sessions() as session:
        chat = (await session.execute(select(Target).where(col(Target.address) == "U7"))).one()
        bob = (await session.execute(select(Person))).scalar_one()
    assert chat[0].person_id == bob.id


async def test_log_out_everywhere_revokes_every_mailed_link(web_env: WebEnv) -> None:
    async with web_env.sessions() as session, session.begin():
        result = await request_subscription(
            session=session, email="ann@lab.org", settings=web_env.settings, now=NOW
        )
        ann = await session.get(Person, result.person_id)
        assert ann is not None
        ann.email_status = "confirmed"
    manage = person_token(web_env.settings, ann, "manage")
    unsubscribe = person_token(web_env.settings, ann, "unsubscribe")
    response, html = await request_page(web_env, "GET", f"/manage/{manage}")
    assert "Log out everywhere" in html
    csrf = make_form_token(web_env.settings, bound_to=manage, form="signout")
    response, html = await request_page(
        web_env, "POST", f"/manage/{manage}", data={"action": "signout", "csrf": csrf}
    )
    assert response.status == 200
    assert "Signed out everywhere" in html
    for method, path in (
        ("GET", f"/manage/{manage}"),
        ("GET", f"/unsubscribe/{unsubscribe}"),
        ("POST", f"/unsubscribe/{unsubscribe}"),
    ):
        response, html = await request_page(web_env, method, path)
        assert response.status == 400, path
        assert "replaced by a newer one" in html
        assert "ann@lab.org" not in html
    assert await _status(web_env) == "confirmed"
    # Leaving for good: the links of a deleted person never work again.
    async with web_env.sessions() as session:
        ann = (await session.execute(select(Person))).scalar_one()
    fresh = person_token(web_env.settings, ann, "manage")
    delete = make_form_token(web_env.settings, bound_to=fresh, form="delete")
    await request_page(
        web_env, "POST", f"/manage/{fresh}",
        data={"action": "delete", "csrf": delete, "confirm_delete": "yes"},
    )  # fmt: skip
    response, html = await request_page(web_env, "GET", f"/manage/{fresh}")
    assert response.status == 400
    assert await count(web_env.sessions, Person) == 0


async def test_one_client_ip_may_ask_for_only_so_many_mails(web_env: WebEnv) -> None:
    limit = web_env.settings.confirm_mails_per_ip_per_hour
    for i in range(limit):
        response, _ = await request_page(
            web_env, "POST", "/subscribe", data={"email": f"a{i}@x.org"}
        )
        assert response.status == 303
    response, html = await request_page(web_env, "POST", "/subscribe", data={"email": "z@x.org"})
    assert response.status == 429
    assert "try again in an hour" in html
    assert await count(web_env.sessions, Person) == limit  # the refused one left no trace


async def test_addresses_differing_only_in_case_are_one_person_and_one_limit(
    web_env: WebEnv,
) -> None:
    for email in ("Ann@Lab.org", "ann@lab.org", "ANN@LAB.ORG"):
        response, _ = await request_page(web_env, "POST", "/subscribe", data={"email": email})
        assert response.status == 303
    assert await count(web_env.sessions, Person) == 1
    async with smtp_sink() as (sink, port):
        await deliver_mail(web_env.root, port=port)
    assert [m["To"] for m in sink.messages] == ["Ann@lab.org"]  # one mail an hour


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"email=\xff\xfe%40x.org&topic=rl-for-llm-agents", "application/x-www-form-urlencoded"),
        (b"email=a%40x.org", "application/x-www-form-urlencoded; charset=no-such-charset"),
        ("email=caf\u00e9@x.org".encode("utf-16"), "application/x-www-form-urlencoded"),
    ],
)
async def test_a_form_that_is_not_utf8_is_a_400_that_changes_nothing(
    web_env: WebEnv, body: bytes, content_type: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO):
        response, html = await request_page(
            web_env, "POST", "/subscribe", data=body, headers={"Content-Type": content_type}
        )
    assert response.status == 400
    assert "UTF-8" in html
    assert "Traceback" not in caplog.text
    assert await count(web_env.sessions, Person) == 0


async def test_metrics_need_the_bearer_token_and_no_server_version_leaks(
    web_env: WebEnv,
) -> None:
    for headers, status in (
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": f"Basic {METRICS_TOKEN}"}, 401),
        ({"Authorization": f"Bearer {METRICS_TOKEN}"}, 200),
    ):
        response, body = await request_page(web_env, "GET", "/metrics", headers=headers)
        assert response.status == status, headers
        assert ("papertide_web_requests_total" in body) is (status == 200)
    for path in ("/topics", "/healthz", "/nope", "/metrics"):
        response, _ = await request_page(web_env, "GET", path)
        server = response.headers.get("Server", "")
        assert "aiohttp" not in server.lower()
        assert "python" not in server.lower()


async def test_metrics_are_off_without_a_token(web_env: WebEnv) -> None:
    settings = web_env.settings.model_copy(update={"metrics_token": None})
    app = build_web_app(settings=settings, store=web_env.root.store)
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Bearer x"}):
            response = await client.get("/metrics", headers=headers)
            assert response.status == 404


async def test_query_strings_do_not_bypass_the_page_cache(web_env: WebEnv) -> None:
    response, _ = await request_page(web_env, "GET", "/topics/rl-for-llm-agents")
    assert response.status == 200
    async with web_env.sessions() as session, session.begin():
        topic = (
            await session.execute(select(Topic).where(col(Topic.slug) == "rl-for-llm-agents"))
        ).scalar_one()
        session.add(
            Paper(id="2612.00001", title="Fresh Paper Nobody Saw", published=NOW + timedelta(1),
                  updated=NOW + timedelta(1), categories=["cs.AI"])
        )  # fmt: skip
        await session.flush()
        session.add(PaperTopic(paper_id="2612.00001", topic_id=topic.id))
    for query in ("?utm=1", "?x=2&y=3", "?page=1", "?page=abc", "?"):
        _, html = await request_page(web_env, "GET", "/topics/rl-for-llm-agents" + query)
        assert "Fresh Paper Nobody Saw" not in html, query  # served from the one cache entry
    _, feed = await request_page(web_env, "GET", "/topics/rl-for-llm-agents.atom")
    _, feed_busted = await request_page(web_env, "GET", "/topics/rl-for-llm-agents.atom?r=9")
    assert feed == feed_busted


async def test_half_sent_requests_are_closed_after_the_header_timeout(
    web_env: WebEnv,
) -> None:
    runner = await serve_web(web_env.root.web_app(), "127.0.0.1", 0, header_timeout=0.5)
    try:
        port = runner.addresses[0][1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /topics HTTP/1.1\r\nHost: x\r\nX-Slow: ")  # never finished
        await writer.drain()
        async with asyncio.timeout(5):
            assert await reader.read() == b""  # the server hung up
        writer.close()
        # A complete request on a fresh connection is served as usual.
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        async with asyncio.timeout(5):
            assert (await reader.read()).startswith(b"HTTP/1.1 200")
        writer.close()
    finally:
        await runner.cleanup()
