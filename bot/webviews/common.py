"""What every web handler shares: app keys, the clock, page rendering, headers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from bot.app import AppContext
from bot.webviews.templating import render

# (session, slug, now) -> {count_4w, count_prev_4w, change_pct, share_pct, spiking,
#                          p_value, weekly: [12 counts], line} | None
Momentum = Callable[[AsyncSession, str, datetime], Awaitable[dict[str, Any] | None]]
LeaderState = Callable[[], str | Awaitable[str]]


@dataclass(frozen=True, slots=True)
class WebDeps:
    """What the handlers need, wired once by `build_web_app`."""

    ctx: AppContext
    clock: Callable[[], datetime]
    momentum: Momentum | None
    leader_state: LeaderState


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


def page(
    template: str, *, status: int = 200, private: bool = False, **context: Any
) -> web.Response:
    """An HTML page from templates/web/<template>; `private` pages are never cached."""
    response = web.Response(
        text=render(f"web/{template}", **context), status=status, content_type="text/html"
    )
    response.headers["Cache-Control"] = "no-store" if private else "public, max-age=60"
    return response


def error_page(status: int, title: str, message: str) -> web.Response:
    """The one error page: what went wrong and what to do, never a stack trace."""
    return page("error.html", status=status, private=True, title=title, message=message)
