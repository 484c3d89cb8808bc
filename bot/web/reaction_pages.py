"""The digest's "More / Less like this" links, and the manage page's reaction buttons.

`GET /react/{token}?paper=…&leaning=more` shows one button and changes nothing (mail
scanners fetch every link); its POST records the reaction on the person's mailbox
target. The token is a `react` token signed with the person's token version, so "Log
out everywhere" revokes every such link; TokenError becomes the middleware's 400 page.

`POST /manage/{token}/reactions` is the manage page's Undo (one reaction) and "Erase
all reactions", each with its own form token bound to the manage token, like the
page's other forms.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from bot.config import Settings
from bot.store.models import Person
from bot.subscriptions.marking import (
    UnknownPaper,
    erase_for_person,
    leaning_word,
    parse_leaning,
    person_reactions,
    react_by_mail,
    stored_paper,
    undo_for_person,
)
from bot.subscriptions.optin import load_owner
from bot.subscriptions.tokens import check_form_token, make_form_token, person_token, read_token
from bot.subscriptions.urls import manage_path, manage_reactions_path, react_path
from bot.types import Leaning
from bot.web.common import deps, error_page, form_action, page, read_form

REACTION_FORMS = ("unreact", "erase")
_BAD_LINK = (
    "This link does not name a paper and a leaning we know; use the link from the mail as it is."
)


def _refused() -> web.Response:
    return error_page(
        403,
        "This form has expired",
        "The form did not come from its page. Open the link again and press the button.",
    )


def _ask(request: web.Request) -> tuple[str, Leaning | None]:
    return str(request.query.get("paper", ""))[:300], parse_leaning(
        str(request.query.get("leaning", ""))
    )


async def get_react(request: web.Request) -> web.Response:
    """GET /react/{token}: which paper, which way, one button; nothing is recorded."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="react", now=d.clock())
    paper_id, leaning = _ask(request)
    if leaning is None:
        return error_page(400, "This link is damaged", _BAD_LINK)
    try:
        async with d.store.read_sessions() as session:
            await load_owner(session=session, data=data)  # a revoked link: TokenError, 400
            paper = await stored_paper(session=session, paper_id=paper_id)
    except UnknownPaper:
        return error_page(400, "This link is damaged", _BAD_LINK)
    word = leaning_word(leaning)
    return page(
        "react.html",
        private=True,
        title=" ".join(paper.title.split()),
        word=word,
        action=react_path(token, paper.id, word),
        csrf=make_form_token(d.settings, bound_to=token, form="react"),
    )


async def post_react(request: web.Request) -> web.Response:
    """POST /react/{token}: the page's button records the reaction (latest word wins)."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="react", now=d.clock())
    form = await read_form(request)
    if not check_form_token(
        d.settings, bound_to=token, form="react", value=str(form.get("csrf", ""))
    ):
        return _refused()
    paper_id, leaning = _ask(request)
    if leaning is None:
        return error_page(400, "This link is damaged", _BAD_LINK)
    try:
        async with d.store.sessions() as session, session.begin():
            person = await load_owner(session=session, data=data)
            paper, target_id = await react_by_mail(
                session=session, person=person, paper_id=paper_id, leaning=leaning
            )
            manage = person_token(d.settings, person, "manage")
    except UnknownPaper:
        return error_page(400, "This link is damaged", _BAD_LINK)
    return page(
        "reacted.html",
        private=True,
        title=" ".join(paper.title.split()),
        word=leaning_word(leaning),
        manage_url=d.urls.manage(manage),
        undo_action=manage_reactions_path(manage),
        undo_csrf=make_form_token(d.settings, bound_to=manage, form="unreact"),
        target_id=target_id,
        paper_id=paper.id,
    )


def reaction_forms(settings: Settings, token: str) -> dict[str, str]:
    """The manage page's reaction form tokens, bound to its manage token."""
    return {f: make_form_token(settings, bound_to=token, form=f) for f in REACTION_FORMS}


async def manage_context(session: AsyncSession, person: Person, token: str) -> dict[str, Any]:
    """What the manage page's "Your reactions" part shows."""
    return {
        "reactions": await person_reactions(session=session, person=person),
        "reactions_action": manage_reactions_path(token),
    }


async def post_manage_reactions(request: web.Request) -> web.Response:
    """POST /manage/{token}/reactions: Undo one reaction, or erase them all."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="manage", now=d.clock())
    form = await read_form(request)
    action = form_action(d.settings, token, form, REACTION_FORMS)
    if action is None:
        return _refused()
    try:
        target_id = int(str(form.get("target", "0") or "0"))
    except ValueError:
        target_id = 0
    async with d.store.sessions() as session, session.begin():
        person = await load_owner(session=session, data=data)
        if action == "erase":
            await erase_for_person(session=session, person=person)
        else:
            await undo_for_person(
                session=session, person=person, target_id=target_id,
                paper_id=str(form.get("paper", ""))[:200],
            )  # fmt: skip
    raise web.HTTPSeeOther(manage_path(token) + "?saved=1#reactions")
