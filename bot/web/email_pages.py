"""The subscription pages: follow by email, confirm, unsubscribe, manage.

Handlers are thin: read the form, call one function of bot.subscriptions in one
transaction, render a page. Token problems raise TokenError, which the error
middleware turns into a 400 page that says what to do.
"""

from __future__ import annotations

from zoneinfo import available_timezones

from aiohttp import web

from bot.catalog.lookup import TopicNotFound, topic_summaries
from bot.config import Settings
from bot.subscriptions.addresses import AddressError
from bot.subscriptions.optin import (
    confirm,
    delete_person,
    load_owner,
    request_subscription,
    resume,
    unsubscribe,
)
from bot.subscriptions.preferences import PreferenceError, load_preferences, update_preferences
from bot.subscriptions.tokens import check_form_token, make_form_token, make_token, read_token
from bot.subscriptions.urls import SUBSCRIBE_SENT, manage_path
from bot.web.common import deps, error_page, page

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
TIMEZONES = tuple(sorted(available_timezones()))
MANAGE_FORMS = ("save", "resume", "delete")


async def post_subscribe(request: web.Request) -> web.Response:
    """POST /subscribe: start double opt-in; the page reads the same for every address."""
    d = deps(request)
    form = await request.post()
    email, slug = str(form.get("email", "")), str(form.get("topic", "")) or None
    try:
        async with d.store.sessions() as session, session.begin():
            await request_subscription(
                session=session,
                email=email,
                settings=d.settings,
                now=d.clock(),
                topic_slug=slug,
            )
    except (AddressError, TopicNotFound) as exc:
        return page(
            "subscribe.html", status=400, private=True, error=str(exc), email=email, topic=slug
        )
    raise web.HTTPSeeOther(SUBSCRIBE_SENT)


async def show_subscribe(request: web.Request) -> web.Response:
    """GET /subscribe: the plain form (also where a failed submission lands)."""
    topic = request.query.get("topic") or None
    return page("subscribe.html", private=True, error=None, email="", topic=topic)


async def show_sent(request: web.Request) -> web.Response:
    """GET /subscribe/sent: 'check your inbox', whatever the address's state."""
    return page("sent.html", private=True)


async def get_confirm(request: web.Request) -> web.Response:
    """GET /confirm/{token}: confirm the address (idempotent)."""
    d = deps(request)
    token = request.match_info["token"]
    async with d.store.sessions() as session, session.begin():
        person = await confirm(session=session, token=token, settings=d.settings, now=d.clock())
        assert person.id is not None
        assert person.email is not None
        manage = make_token(d.settings, person_id=person.id, email=person.email, purpose="manage")
    return page(
        "confirmed.html",
        private=True,
        email=person.email,
        manage_url=d.urls.manage(manage),
    )


async def get_unsubscribe(request: web.Request) -> web.Response:
    """GET /unsubscribe/{token}: one button; following the link changes nothing."""
    d = deps(request)
    token = request.match_info["token"]
    data = read_token(d.settings, token, purpose="unsubscribe", now=d.clock())
    return page("unsubscribe.html", private=True, email=data.email, token=token)


async def post_unsubscribe(request: web.Request) -> web.Response:
    """POST /unsubscribe/{token}: RFC 8058 one-click, or the page's button. No other step."""
    d = deps(request)
    token = request.match_info["token"]
    await request.read()  # "List-Unsubscribe=One-Click" or the button's form: same effect
    async with d.store.sessions() as session, session.begin():
        person = await unsubscribe(session=session, token=token, settings=d.settings, now=d.clock())
        manage_url = None
        if person is not None and person.id is not None and person.email is not None:
            manage = make_token(
                d.settings, person_id=person.id, email=person.email, purpose="manage"
            )
            manage_url = d.urls.manage(manage)
    return page("unsubscribed.html", private=True, manage_url=manage_url)


def _form_tokens(settings: Settings, token: str) -> dict[str, str]:
    return {f: make_form_token(settings, bound_to=token, form=f) for f in MANAGE_FORMS}


async def _manage_page(
    request: web.Request, token: str, *, status: int = 200, error: str | None = None
) -> web.Response:
    d = deps(request)
    data = read_token(d.settings, token, purpose="manage", now=d.clock())
    async with d.store.sessions() as session:
        person = await load_owner(session=session, data=data)
        prefs = await load_preferences(session=session, person=person)
        topics = await topic_summaries(session=session)
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
    form = await request.post()
    action = str(form.get("action", ""))
    if action not in MANAGE_FORMS or not check_form_token(
        d.settings, bound_to=token, form=action, value=str(form.get("csrf", ""))
    ):
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
    raise web.HTTPSeeOther(manage_path(token) + "?saved=1")
