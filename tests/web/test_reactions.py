"""The digest's "More / Less like this" links and the manage page's reactions, over real
HTTP on loopback, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest
from sqlmodel import col, select

from bot.outbox.targets import get_or_create_target
from bot.store.models import Paper, Person, Reaction, Target
from bot.subscriptions.optin import request_subscription
from bot.subscriptions.reactions import react
from bot.subscriptions.tokens import make_form_token, person_token
from bot.subscriptions.urls import react_path
from bot.timeutil import utcnow
from bot.types import Leaning, Platform, TargetKind
from tests.support.web import NOW, WebEnv, count, request_page, running_web

NASTY = "<script>alert(1)</script> & friends"


@pytest.fixture
async def web_env(db_url: str) -> AsyncIterator[WebEnv]:
    async with running_web(db_url) as env:
        yield env


async def _ann(env: WebEnv) -> Person:
    async with env.sessions() as session, session.begin():
        now = utcnow()
        session.add(Paper(id="2611.01234", title=NASTY, published=now, updated=now,
                          ingested_at=now))  # fmt: skip
        result = await request_subscription(
            session=session, email="ann@lab.org", settings=env.settings, now=NOW
        )
        ann = await session.get(Person, result.person_id)
        assert ann is not None
        ann.email_status = "confirmed"
        return ann


async def _reactions(env: WebEnv) -> list[tuple[str, str, int, str]]:
    async with env.sessions() as session:
        rows = await session.execute(
            select(col(Target.kind), col(Reaction.paper_id), col(Reaction.leaning),
                   col(Reaction.via))
            .join(Target, col(Target.id) == col(Reaction.target_id))
            .order_by(col(Target.kind))
        )  # fmt: skip
        return [(k, p, n, v) for k, p, n, v in rows.all()]


def _csrf(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found is not None
    return found.group(1)


async def test_the_link_shows_one_button_and_only_the_post_records(web_env: WebEnv) -> None:
    ann = await _ann(web_env)
    token = person_token(web_env.settings, ann, "react")
    path = react_path(token, "2611.01234", "more")
    for method in ("GET", "HEAD", "GET"):  # what a mail scanner does
        response, html = await request_page(web_env, method, path)
        assert response.status == 200
        assert response.headers["Cache-Control"] == "no-store"
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; friends" in html
    assert "<script>alert" not in html
    assert '<button type="submit">More like this</button>' in html
    assert await _reactions(web_env) == []

    response, _ = await request_page(web_env, "POST", path, data={"csrf": "0" * 64})
    assert response.status == 403
    assert await _reactions(web_env) == []
    response, done = await request_page(web_env, "POST", path, data={"csrf": _csrf(html)})
    assert response.status == 200
    assert "More like “&lt;script&gt;" in done
    assert await _reactions(web_env) == [("email", "2611.01234", 1, "email")]
    less = react_path(token, "2611.01234", "less")
    _, html = await request_page(web_env, "GET", less)
    await request_page(web_env, "POST", less, data={"csrf": _csrf(html)})
    assert await _reactions(web_env) == [("email", "2611.01234", -1, "email")]
    # The page's Undo (a manage form) takes it back.
    undo = re.search(r'action="([^"]+/reactions)"', done)
    assert undo is not None
    form = dict(re.findall(r'name="(action|csrf|target|paper)" value="([^"]*)"', done))
    response, _ = await request_page(web_env, "POST", undo.group(1), data=form)
    assert response.status == 303
    assert await _reactions(web_env) == []


@pytest.mark.parametrize(
    ("query", "status", "says"),
    [
        ("paper=2611.99999&leaning=more", 400, "does not name a paper"),
        ("paper=2611.01234&leaning=sideways", 400, "does not name a paper"),
        ("paper=" + "9" * 400 + "&leaning=less", 400, "does not name a paper"),
    ],
)
async def test_a_bad_paper_or_leaning_is_a_clear_page(
    web_env: WebEnv, query: str, status: int, says: str
) -> None:
    ann = await _ann(web_env)
    token = person_token(web_env.settings, ann, "react")
    for method in ("GET", "POST"):
        response, html = await request_page(
            web_env, method, f"/react/{token}?{query}", data={"csrf": "x"}
        )
        assert response.status in (status, 403), method
        assert says in html or "form has expired" in html
    assert await _reactions(web_env) == []


async def test_forged_other_purpose_and_revoked_tokens_are_refused(web_env: WebEnv) -> None:
    ann = await _ann(web_env)
    token = person_token(web_env.settings, ann, "react")
    manage = person_token(web_env.settings, ann, "manage")
    for bad, says in (
        (token[:-3] + "abc", "damaged"),
        (manage, "not a react link"),
    ):
        response, html = await request_page(web_env, "GET", react_path(bad, "2611.01234", "more"))
        assert response.status == 400
        assert says in html
    _, html = await request_page(web_env, "GET", react_path(token, "2611.01234", "more"))
    csrf = _csrf(html)
    signout = make_form_token(web_env.settings, bound_to=manage, form="signout")
    await request_page(
        web_env, "POST", f"/manage/{manage}", data={"action": "signout", "csrf": signout}
    )
    for method in ("GET", "POST"):
        response, html = await request_page(
            web_env, method, react_path(token, "2611.01234", "more"), data={"csrf": csrf}
        )
        assert response.status == 400
        assert "replaced by a newer one" in html
    assert await _reactions(web_env) == []


async def test_the_manage_page_lists_undoes_and_erases_reactions(web_env: WebEnv) -> None:
    ann = await _ann(web_env)
    async with web_env.sessions() as session, session.begin():
        slack = await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="U1",
            kind=TargetKind.USER, person_id=ann.id,
        )  # fmt: skip
        other = await get_or_create_target(
            session=session, platform=Platform.SLACK, workspace="T1", address="U2",
            kind=TargetKind.USER,
        )  # fmt: skip
        assert slack.id is not None
        assert other.id is not None
        for target_id, pid, leaning in (
            (slack.id, "2611.01234", Leaning.MORE),
            (slack.id, "2609.00001", Leaning.LESS),
            (other.id, "2609.00001", Leaning.MORE),
        ):
            await react(session=session, target_id=target_id, paper_id=pid, leaning=leaning,
                        via="slack")  # fmt: skip
    manage = person_token(web_env.settings, ann, "manage")
    response, html = await request_page(web_env, "GET", f"/manage/{manage}")
    assert response.status == 200
    assert 'id="reactions"' in html
    assert '<a href="https://arxiv.org/abs/2611.01234">&lt;script&gt;' in html
    assert "Learning to Sell 1" in html
    assert html.count(">Undo</button>") == 2  # ann's two, not U2's
    assert "less like this" in html
    assert "Erase all reactions" in html

    action = f"/manage/{manage}/reactions"
    unreact = make_form_token(web_env.settings, bound_to=manage, form="unreact")
    # Someone else's target through ann's page: nothing happens.
    theirs = {"action": "unreact", "csrf": unreact, "target": str(other.id), "paper": "2609.00001"}
    await request_page(web_env, "POST", action, data=theirs)
    mine = {"action": "unreact", "csrf": unreact, "target": str(slack.id), "paper": "2611.01234"}
    response, _ = await request_page(web_env, "POST", action, data=mine)
    assert response.status == 303
    assert response.headers["Location"].startswith(f"/manage/{manage}?saved=1")
    assert await count(web_env.sessions, Reaction) == 2
    response, _ = await request_page(
        web_env, "POST", action, data={"action": "erase", "csrf": "bad"}
    )
    assert response.status == 403
    erase = make_form_token(web_env.settings, bound_to=manage, form="erase")
    await request_page(web_env, "POST", action, data={"action": "erase", "csrf": erase})
    async with web_env.sessions() as session:
        left = (await session.execute(select(col(Reaction.target_id)))).scalars().all()
    assert left == [other.id]
    _, html = await request_page(web_env, "GET", f"/manage/{manage}")
    assert "No reactions yet" in html
