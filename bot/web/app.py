"""The web app: public topic pages, the email subscription pages, health and metrics.

`build_web_app` assembles the handlers of this package around one middleware that turns
every failure into a page (never a stack trace) and one signal that puts the security
headers on every response. The composition root plugs chat apps' routes in via
`extra_routes`. Paths are spelled once, in bot.subscriptions.urls.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from datetime import datetime

from aiohttp import web
from prometheus_client import Counter, Histogram

from bot import collector
from bot.ask.service import Asker
from bot.config import Settings
from bot.errors import PapertideError
from bot.store.store import Store
from bot.subscriptions import urls
from bot.subscriptions.tokens import TokenError
from bot.templating import read_static
from bot.timeutil import utcnow
from bot.web import ask_pages, email_pages, emerging_page, ops, reaction_pages, topics
from bot.web.common import (
    DEPS,
    SECURITY_HEADERS,
    BadForm,
    LeaderState,
    Momentum,
    MomentumCache,
    PageCache,
    WebDeps,
    error_page,
)
from bot.web.ops import HealthState
from bot.web.paper_items import PaperItems

log = logging.getLogger(__name__)

REQUESTS = Counter(
    "papertide_web_requests_total", "HTTP requests served", ["route", "method", "status"]
)
LATENCY = Histogram("papertide_web_request_seconds", "HTTP request latency", ["route"])
MAX_BODY = 64 * 1024
# A token is any text (a malformed one is a 400 page, not a 404); slugs are bounded.
_SLUG = "{slug:[A-Za-z0-9_-]{1,128}}"


def _route_name(request: web.Request) -> str:
    # The route template ("/topics/{slug}"), never the raw path: bounded label values.
    resource = request.match_info.route.resource
    return resource.canonical if resource is not None else "unmatched"


@web.middleware
async def _errors(request: web.Request, handler: Callable[..., object]) -> web.StreamResponse:
    started = time.perf_counter()
    try:
        response: web.StreamResponse = await handler(request)  # type: ignore[misc]
    except web.HTTPException as exc:
        if exc.status < 400:  # redirects: aiohttp wants them raised, not returned
            _observe(request, exc.status, started)
            raise
        if exc.status == 404:
            response = error_page(404, "Page not found", "Nothing lives here. Try /topics.")
        elif exc.status == 405:
            response = error_page(405, "Method not allowed", "Use the page's own links and forms.")
        elif exc.status == 413:
            response = error_page(413, "Too much data", "That form submission was too large.")
        else:
            response = error_page(exc.status, exc.reason, "Go back and try again.")
    except TokenError as exc:
        response = error_page(400, "This link does not work", str(exc))
    except BadForm as exc:
        log.info("web.bad_form", extra={"path": request.path, "error": str(exc)})
        response = error_page(400, "Unreadable form", str(exc))
    except PapertideError as exc:
        response = error_page(400, "That did not work", str(exc))
    except Exception:
        log.exception("web.unhandled", extra={"path": request.path})
        response = error_page(
            500, "Something went wrong on our side", "Nothing was changed. Try again in a minute."
        )
    _observe(request, response.status, started)
    return response


def _observe(request: web.Request, status: int, started: float) -> None:
    route = _route_name(request)
    REQUESTS.labels(route, request.method, str(status)).inc()
    LATENCY.labels(route).observe(time.perf_counter() - started)


async def _security_headers(_request: web.Request, response: web.StreamResponse) -> None:
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    # aiohttp would name itself and its version (and Python's): nobody needs to know.
    response.headers["Server"] = "papertide"


def _default_leader_state() -> str:
    return "single-process"


def build_web_app(
    *,
    settings: Settings,
    store: Store,
    momentum: Momentum | None = None,
    asker: Asker | None = None,
    extra_routes: Iterable[Callable[[web.Application], None]] = (),
    leader_state: LeaderState | None = None,
    clock: Callable[[], datetime] = utcnow,
    momentum_ttl: float = 300.0,
    page_cache_seconds: float = 30.0,
) -> web.Application:
    """The aiohttp app. `momentum(session, slug, now)` fills the topic page's box;
    `leader_state()` (sync or async) names the scheduler leader for /healthz; `asker`
    answers the topic pages' questions (without it the ask box says it is off).
    Momentum is cached per topic for `momentum_ttl` seconds, rendered topic pages and
    feeds for `page_cache_seconds` (0 turns that off)."""
    app = web.Application(middlewares=[_errors], client_max_size=MAX_BODY)
    app[DEPS] = WebDeps(
        settings=settings,
        store=store,
        urls=urls.PublicUrls(settings.public_url),
        clock=clock,
        momentum=MomentumCache(momentum, ttl=momentum_ttl),
        leader_state=leader_state or _default_leader_state,
        pages=PageCache(page_cache_seconds),
        items=PaperItems(),
        asker=asker,
    )
    app.on_response_prepare.append(_security_headers)
    css = read_static("web/site.css")

    async def site_css(_request: web.Request) -> web.Response:
        response = web.Response(text=css, content_type="text/css")
        response.headers["Cache-Control"] = "public, max-age=3600"
        return response

    async def home(_request: web.Request) -> web.Response:
        raise web.HTTPFound(urls.TOPICS)

    r = app.router
    r.add_get("/", home)
    topic, feed = urls.TOPIC.format(slug=_SLUG), urls.TOPIC_FEED.format(slug=_SLUG)
    r.add_get(urls.STATIC_CSS, site_css)
    r.add_get(urls.TOPICS, topics.show_topics)
    r.add_get(urls.EMERGING, emerging_page.show_emerging)
    r.add_get(feed, topics.show_feed)
    r.add_get(urls.TOPIC_ASK.format(slug=_SLUG), ask_pages.show_answer)
    r.add_get(topic, topics.show_topic)
    r.add_get(urls.SUBSCRIBE, email_pages.show_subscribe)
    r.add_post(urls.SUBSCRIBE, email_pages.post_subscribe)
    r.add_get(urls.SUBSCRIBE_SENT, email_pages.show_sent)
    r.add_get(urls.CONFIRM, email_pages.get_confirm)
    r.add_post(urls.CONFIRM, email_pages.post_confirm)
    r.add_get(urls.LINK, email_pages.get_link)
    r.add_post(urls.LINK, email_pages.post_link)
    r.add_get(urls.UNSUBSCRIBE, email_pages.get_unsubscribe)
    r.add_post(urls.UNSUBSCRIBE, email_pages.post_unsubscribe)
    r.add_get(urls.MANAGE, email_pages.get_manage)
    r.add_post(urls.MANAGE, email_pages.post_manage)
    r.add_post(urls.MANAGE_REACTIONS, reaction_pages.post_manage_reactions)
    r.add_get(urls.REACT, reaction_pages.get_react)
    r.add_post(urls.REACT, reaction_pages.post_react)
    r.add_get(urls.HEALTHZ, ops.get_healthz)
    r.add_get(urls.METRICS, ops.metrics_handler(settings))
    for install in extra_routes:
        install(app)
    return app


def build_health_app(*, settings: Settings, state: HealthState) -> web.Application:
    """A process's own /healthz (a worker has no web app): `state()` says how it is,
    "status" == "ok" answers 200, anything else 503. /metrics follows the same token
    rule as on the main app."""
    app = web.Application(middlewares=[_errors], client_max_size=1024)
    app.on_response_prepare.append(_security_headers)
    app.router.add_get(urls.HEALTHZ, ops.health_handler(state))
    app.router.add_get(urls.METRICS, ops.metrics_handler(settings))
    return app


# A client gets this long from connecting (or from its last response) to finishing its
# next request's headers; aiohttp's own default is an hour, which lets a few hundred
# half-sent requests hold every file descriptor.
HEADER_TIMEOUT_SECONDS = 15.0


async def serve_web(
    app: web.Application, host: str, port: int, *, header_timeout: float = HEADER_TIMEOUT_SECONDS
) -> web.AppRunner:
    """Start serving `app` on host:port; the caller awaits `runner.cleanup()` to stop."""
    # aiohttp arms keepalive_timeout at connection start and after each response, and
    # closes the connection if no complete request arrived by then: a header timeout.
    runner = web.AppRunner(app, access_log=None, keepalive_timeout=header_timeout)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    # What is built by now lives as long as the process (see bot/collector.py).
    collector.keep_forever()
    log.info("web.serving", extra={"host": host, "port": port})
    return runner
