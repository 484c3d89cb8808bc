"""The subscription pages: follow by email, confirm, link a chat account, unsubscribe,
manage.

Handlers are thin: read the form, call one function of bot.subscriptions in one
transaction, render a page. Token problems raise TokenError, which the error
middleware turns into a 400 page that says what to do.

Every link in a mail lands on a page whose GET (and HEAD) changes nothing: mail
security scanners fetch every link, so only the page's button (a POST) acts.
"""

from __future__ import annotations

from zoneinfo import available_timezones

from aiohttp import web

from bot.catalog.lookup import TopicNotFound, find_topic, topic_summaries
from bot.config import Settings
from bot.store.models import Person
from bot.subscriptions.addresses import AddressError
from bot.subscriptions.chat_digest import describe_chat, link_chat, read_link
from bot.subscriptions.one_click import unsubscribe
from bot.subscriptions.optin import (
    confirm,
    delete_person,
    load_owner,
    owns,
    request_subscription,
    resume,
    sign_out_everywhere,
)
from bot.subscriptions.preferences import PreferenceError, load_preferences, update_preferences
from bot.subscriptions.quotas import TooManyRequests
from bot.subscriptions.tokens import make_form_token, make_token, person_token, read_token
from bot.subscriptions.urls import SUBSCRIBE_SENT, confirm_path, link_path, manage_path
from bot.types import EmailStatus
from bot.web.common import (
    SlottedPage,
    client_ip,
    deps,
    error_page,
    form_action,
    page,
    read_form,
)
from bot.web.reaction_pages import manage_context, reaction_forms

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TIMEZONES = tuple(sorted(available_timezones()))
MANAGE_FORMS = ("save", "resume", "signout", "delete")


async def post_subscribe(request: web.Request) -> web.Response:
    """POST /subscribe: start double opt-in; the page reads the same for every address."""
    d = deps(request)
    form = await read_form(request)
    email, slug = str(form.get("email", "")), str(form.get("topic", "")) or None
    try:
        async with d.store.sessions() as session, session.begin():
            await request_subscription(
                session=session,
                email=email,
                settings=d.settings,
                now=d.clock(),
                topic_slug=slug,
                client_ip=client_ip(request, d.settings),
            )
    except (AddressError, TopicNotFound) as exc:
        return page(
            "subscribe.html", status=400, private=True, error=str(exc), email=email, topic=slug
        )
    except TooManyRequests as exc:
        return error_page(429, "Too many requests", str(exc))
    raise web.HTTPSeeOther(SUBSCRIBE_SENT)


async def show_subscribe(request: web.Request) -> web.Response:
    """GET /subscribe: the plain form (also where a failed submission lands)."""
    topic = request.query.get("topic") or None
    return page("subscribe.html", private=True, error=None, email="", topic=topic)


async def show_sent(request: web.Request) -> web.Response:
    """GET /subscribe/sent: 'check your inbox', whatever the address's state."""
    return page("sent.html", private=True)


async def get_confirm(request: web.Request) -> web.Response:
    """GET /confirm/{token}: the one-button page; following the link changes nothing."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="confirm", now=d.clock())
    async with d.store.read_sessions() as session:
        person = await load_owner(session=session, data=data)
        topic_name = None
        if data.topic_slug:
            try:
                topic_name = (await find_topic(session=session, text=data.topic_slug)).name
            except TopicNotFound:
                topic_name = None
    return page(
        "confirm.html",
        private=True,
        email=person.email,
        topic_name=topic_name,
        action=confirm_path(token),
    )


async def post_confirm(request: web.Request) -> web.Response:
    """POST /confirm/{token}: the page's button confirms the address (idempotent)."""
    d = deps(request)
    token = request.match_info["token"]
    await request.read()
    async with d.store.sessions() as session, session.begin():
        person = await confirm(session=session, token=token, settings=d.settings, now=d.clock())
        manage = person_token(d.settings, person, "manage")
    return page(
        "confirmed.html",
        private=True,
        email=person.email,
        manage_url=d.urls.manage(manage),
    )


async def get_link(request: web.Request) -> web.Response:
    """GET /link/{token}: what linking a chat account means, and one button."""
    d = deps(request)
    token = request.match_info["token"]
    async with d.store.read_sessions() as session:
        person, chat = await read_link(
            session=session, settings=d.settings, token=token, now=d.clock()
        )
    return page(
        "link.html", private=True, email=person.email, who=describe_chat(chat),
        action=link_path(token),
    )  # fmt: skip


async def post_link(request: web.Request) -> web.Response:
    """POST /link/{token}: the mailbox owner links the chat account; the digest starts."""
    d = deps(request)
    token = request.match_info["token"]
    await request.read()
    async with d.store.sessions() as session, session.begin():
        person, chat = await link_chat(
            session=session, settings=d.settings, token=token, now=d.clock()
        )
        manage = person_token(d.settings, person, "manage")
    return page(
        "linked.html", private=True, email=person.email, who=describe_chat(chat),
        manage_url=d.urls.manage(manage),
    )  # fmt: skip


async def get_unsubscribe(request: web.Request) -> web.Response:
    """GET /unsubscribe/{token}: one button; following the link changes nothing."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="unsubscribe", now=d.clock())
    async with d.store.read_sessions() as session:
        found = await session.get(Person, data.person_id)
        if found is not None and found.email_status != EmailStatus.UNSUBSCRIBED:
            found = await load_owner(session=session, data=data)  # a revoked link: 400
    # Stopped already (which revoked the link) or gone: the button only says so. The
    # address is shown only for a link that still speaks for its person.
    email = found.email if found is not None and owns(found, data) else None
    return page("unsubscribe.html", private=True, email=email, token=token)


# The page a click answers, rendered once: only the fresh manage link differs per click.
_UNSUBSCRIBED = SlottedPage("unsubscribed.html", "manage_url")


async def post_unsubscribe(request: web.Request) -> web.Response:
    """POST /unsubscribe/{token}: RFC 8058 one-click, or the page's button. No other step."""
    d = deps(request)
    token = request.match_info["token"]
    await request.read()  # "List-Unsubscribe=One-Click" or the button's form: same effect
    data = read_token(d.settings, token, purpose="unsubscribe", now=d.clock())
    stopped = await unsubscribe(
        one_shot=d.store.one_shot, engine=d.store.engine, data=data, now=d.clock()
    )
    manage_url = None
    if stopped is not None:
        # Unsubscribing revoked the old links; this fresh one lets them change their mind.
        manage = make_token(
            d.settings, person_id=stopped.id, version=stopped.token_version, purpose="manage"
        )
        manage_url = d.urls.manage(manage)
    return _UNSUBSCRIBED.response(manage_url)


def _form_tokens(settings: Settings, token: str) -> dict[str, str]:
    forms = {f: make_form_token(settings, bound_to=token, form=f) for f in MANAGE_FORMS}
    return forms | reaction_forms(settings, token)


async def _manage_page(
    request: web.Request, token: str, *, status: int = 200, error: str | None = None
) -> web.Response:
    d = deps(request)
    data = read_token(d.settings, token, purpose="manage", now=d.clock())
    async with d.store.sessions() as session:
        person = await load_owner(session=session, data=data)
        prefs = await load_preferences(session=session, person=person)
        topics = await topic_summaries(session=session)
        reactions = await manage_context(session, person, token)
    return page(
        "manage.html",
        status=status,
        private=True,
        error=error,
        saved=request.query.get("saved") == "1",
        person=person,
        prefs=prefs,
        topics=topics,
        weekdays=WEEKDAYS,
        timezones=TIMEZONES,
        token=token,
        csrf=_form_tokens(d.settings, token),
        **reactions,
    )


async def get_manage(request: web.Request) -> web.Response:
    """GET /manage/{token}: topics, alerts, weekday, hour, time zone, leave for good."""
    return await _manage_page(request, request.match_info["token"])


def _int(value: object, name: str) -> int:
    try:
        return int(str(value))
    except ValueError as exc:
        raise PreferenceError(f"Pick a {name} from the list.") from exc


async def post_manage(request: web.Request) -> web.Response:
    """POST /manage/{token}: one of the page's three forms, each with its CSRF token."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="manage", now=d.clock())
    form = await read_form(request)
    action = form_action(d.settings, token, form, MANAGE_FORMS)
    if action is None:
        return error_page(
            403,
            "This form has expired",
            "The form did not come from your manage page. Open the page again and resubmit.",
        )
    if action == "delete" and form.get("confirm_delete") != "yes":
        return await _manage_page(
            request, token, status=400, error="Tick the box to confirm you want to leave for good."
        )
    try:
        async with d.store.sessions() as session, session.begin():
            person = await load_owner(session=session, data=data)
            if action == "delete":
                assert person.id is not None
                await delete_person(session=session, person_id=person.id)
            elif action == "signout":
                await sign_out_everywhere(session=session, person=person)
            elif action == "resume":
                await resume(session=session, person=person, now=d.clock())
            else:
                await update_preferences(
                    session=session,
                    person=person,
                    topics=[str(v) for v in form.getall("topic", [])],
                    weekday=_int(form.get("weekday", ""), "weekday"),
                    hour=_int(form.get("hour", ""), "hour"),
                    timezone=str(form.get("timezone", "")),
                    send_quiet_week=form.get("quiet_week") == "yes",
                    active_alert_ids={_int(v, "alert") for v in form.getall("alert", [])},
                )
    except (PreferenceError, TopicNotFound) as exc:
        return await _manage_page(request, token, status=400, error=str(exc))
    if action == "delete":
        return page("left.html", private=True)
    if action == "signout":
        return page("signed_out.html", private=True)
    raise web.HTTPSeeOther(manage_path(token) + "?saved=1")
