"""What every web handler shares: app keys, the clock, page rendering, headers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web
from markupsafe import escape
from multidict import MultiDictProxy
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.service import Asker
from bot.config import Settings
from bot.errors import PapertideError
from bot.store.store import Store
from bot.subscriptions.tokens import check_form_token
from bot.subscriptions.urls import PublicUrls
from bot.templating import render
from bot.web.paper_items import PaperItems

# (session, slug, now) -> {count_4w, count_prev_4w, change_pct, share_pct, spiking,
#                          p_value, weekly: [12 counts], line} | None
Momentum = Callable[[AsyncSession, str, datetime], Awaitable[dict[str, Any] | None]]
LeaderState = Callable[[], str | Awaitable[str]]


class MomentumCache:
    """Momentum per topic, kept for `ttl` seconds.

    Momentum is a 12-week aggregate that moves when a poll lands (hourly at most), yet
    the topic page is the busiest page: computing it per view would dominate the page's
    cost. One lock per topic lets one request recompute while the others wait for it.
    """

    def __init__(self, momentum: Momentum | None, ttl: float = 300.0) -> None:
        self._momentum = momentum
        self._ttl = ttl
        self._values: dict[str, tuple[float, dict[str, Any] | None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(
        self, sessions: async_sessionmaker[AsyncSession], slug: str, now: datetime
    ) -> dict[str, Any] | None:
        if self._momentum is None:
            return None
        async with self._locks.setdefault(slug, asyncio.Lock()):
            hit = self._values.get(slug)
            if hit is not None and time.monotonic() - hit[0] < self._ttl:
                return hit[1]
            async with sessions() as session:
                value = await self._momentum(session, slug, now)
            self._values[slug] = (time.monotonic(), value)
            return value


class PageCache:
    """Rendered public pages (topic pages, feeds) for `ttl` seconds.

    They are the same for every visitor and change only when a poll lands, so a short
    TTL costs freshness nobody notices and keeps the busiest page off the database.
    Never used for token pages, which are per person.
    """

    def __init__(self, ttl: float, max_entries: int = 2000) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._entries: dict[str, tuple[float, web.Response]] = {}

    def get(self, key: str) -> web.Response | None:
        hit = self._entries.get(key)
        if hit is None or time.monotonic() - hit[0] >= self.ttl:
            return None
        cached = hit[1]
        response = web.Response(body=cached.body, status=cached.status)
        response.headers.update(cached.headers)
        return response

    def put(self, key: str, response: web.Response) -> web.Response:
        if self.ttl > 0 and response.status == 200:
            if len(self._entries) >= self._max:
                self._entries.clear()  # crude but bounded; refilled within one TTL
            self._entries[key] = (time.monotonic(), response)
        return response


@dataclass(frozen=True, slots=True)
class WebDeps:
    """What the handlers need, wired once by `build_web_app`."""

    settings: Settings
    store: Store
    urls: PublicUrls
    clock: Callable[[], datetime]
    momentum: MomentumCache
    leader_state: LeaderState
    pages: PageCache
    items: PaperItems  # the topic pages' rendered papers, by row
    asker: Asker | None = None  # questions about a topic (the ask box, `?q=` on a topic page)


DEPS = web.AppKey("papertide_deps", WebDeps)

# No inline scripts or styles anywhere: the only stylesheet is /static/site.css.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    # Tokens live in URLs: never leak them to another site through Referer.
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "interest-cohort=()",
}


def deps(request: web.Request) -> WebDeps:
    return request.app[DEPS]


class BadForm(PapertideError):
    """A form body that is not UTF-8 text (or is malformed multipart): a 400, never a 500."""


async def read_form(request: web.Request) -> MultiDictProxy[Any]:
    """The submitted form; BadForm when its bytes are not text papertide can read."""
    try:
        return await request.post()
    except (ValueError, LookupError) as exc:  # UnicodeDecodeError, unknown charset, multipart
        raise BadForm("Send the form as UTF-8 text, as the page's own form does.") from exc


def form_action(
    settings: Settings, token: str, form: MultiDictProxy[Any], allowed: tuple[str, ...]
) -> str | None:
    """The form's `action` when it is one of `allowed` and its CSRF token was made for that
    form on the page of `token`; None otherwise (the caller answers "form expired")."""
    action = str(form.get("action", ""))
    if action not in allowed or not check_form_token(
        settings, bound_to=token, form=action, value=str(form.get("csrf", ""))
    ):
        return None
    return action


def client_ip(request: web.Request, settings: Settings) -> str:
    """The client's IP for quotas: the peer, or (behind our own proxy, when told to trust
    it) the last X-Forwarded-For entry, the one that proxy appended."""
    if settings.trust_forwarded_for:
        forwarded = request.headers.get("X-Forwarded-For", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return request.remote or "unknown"


def page(
    template: str, *, status: int = 200, private: bool = False, **context: Any
) -> web.Response:
    """An HTML page from templates/web/<template>; `private` pages are never cached."""
    response = web.Response(
        text=render(f"web/{template}", **context), status=status, content_type="text/html"
    )
    response.headers["Cache-Control"] = "no-store" if private else "public, max-age=60"
    return response


class SlottedPage:
    """A private page whose only per-request part is one value (a link): rendered once
    per process, then answered as bytes with the value put in its place, escaped as the
    template would escape it. For the busiest token pages (the one-click unsubscribe):
    the same bytes as `page(template, **{slot: value})`, without a render per request.

    The template must show the value once, autoescaped, when it is not None; without a
    value it is rendered as is.
    """

    _MARK = "papertide-slot-5f0c2a"  # survives autoescaping unchanged, never in a template

    def __init__(self, template: str, slot: str, **context: Any) -> None:
        self._template, self._slot, self._context = template, slot, context
        self._parts: tuple[bytes, bytes] | None = None
        self._empty: bytes | None = None

    def _render(self, value: str | None) -> bytes:
        context = self._context | {self._slot: value}
        return render(f"web/{self._template}", **context).encode()

    def response(self, value: str | None) -> web.Response:
        """The page with `value` in its slot (or without one)."""
        if value is None:
            if self._empty is None:
                self._empty = self._render(None)
            body = self._empty
        else:
            if self._parts is None:
                head, found, tail = self._render(self._MARK).partition(self._MARK.encode())
                assert found, "the template shows the slot"
                assert self._MARK.encode() not in tail, "the slot shows once"
                self._parts = head, tail
            head, tail = self._parts
            body = b"".join((head, str(escape(value)).encode(), tail))
        response = web.Response(body=body, content_type="text/html", charset="utf-8")
        response.headers["Cache-Control"] = "no-store"
        return response


def error_page(status: int, title: str, message: str) -> web.Response:
    """The one error page: what went wrong and what to do, never a stack trace."""
    return page("error.html", status=status, private=True, title=title, message=message)
