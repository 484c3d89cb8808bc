"""Operations endpoints: /healthz for orchestrators, /metrics for Prometheus.

/metrics names routes, queue depths and platforms: not secret, but nobody else's
business. It answers only with `Authorization: Bearer <PAPERTIDE_METRICS_TOKEN>`, and
not at all (404) while that setting is unset.
"""

from __future__ import annotations

import hmac
import inspect
import logging
from collections.abc import Callable
from typing import Any

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from bot.config import Settings
from bot.web.common import deps

log = logging.getLogger(__name__)


# () -> {"status": "ok" | anything else, ...}: a process's health, as /healthz shows it.
HealthState = Callable[[], dict[str, Any]]


def health_handler(state: HealthState) -> Callable[[web.Request], Any]:
    """GET /healthz for a process without the web app (a worker): 200 when `state()` says
    "ok", else 503; the body is the state."""

    async def healthz(_request: web.Request) -> web.Response:
        try:
            now = state()
        except Exception as exc:
            log.warning("web.health_state_failed", extra={"error": str(exc)})
            now = {"status": "unknown"}
        response = web.json_response(now, status=200 if now.get("status") == "ok" else 503)
        response.headers["Cache-Control"] = "no-store"
        return response

    return healthz


async def get_healthz(request: web.Request) -> web.Response:
    """200 when the database answers and the scheduler's leader is known, else 503."""
    d = deps(request)
    database = "ok"
    try:
        async with d.store.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
    except Exception as exc:  # any driver error means "not healthy", never a 500
        log.warning("web.healthz_db_failed", extra={"error": str(exc)})
        database = "unreachable"
    try:
        state = d.leader_state()
        leader = str(await state) if inspect.isawaitable(state) else str(state)
    except Exception as exc:
        log.warning("web.healthz_leader_failed", extra={"error": str(exc)})
        leader = "unknown"
    healthy = database == "ok" and leader != "unknown"
    response = web.json_response(
        {"status": "ok" if healthy else "unhealthy", "database": database, "leader": leader},
        status=200 if healthy else 503,
    )
    response.headers["Cache-Control"] = "no-store"
    return response


def metrics_allowed(request: web.Request, token: str | None) -> bool | None:
    """True with the right bearer token, False with another, None when metrics are off."""
    if not token:
        return None
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip(), token)


def metrics_handler(settings: Settings) -> Callable[[web.Request], Any]:
    """GET /metrics: Prometheus text format from the default registry, for the bearer of
    PAPERTIDE_METRICS_TOKEN; 401 for anyone else, 404 while no token is set."""
    token = settings.metrics_token.get_secret_value() if settings.metrics_token else None

    async def metrics(request: web.Request) -> web.Response:
        allowed = metrics_allowed(request, token)
        if allowed is None:
            raise web.HTTPNotFound()
        if not allowed:
            response = web.Response(status=401, text="metrics need the bearer token\n")
            response.headers["WWW-Authenticate"] = 'Bearer realm="metrics"'
            return response
        response = web.Response(body=generate_latest())
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        response.headers["Cache-Control"] = "no-store"
        return response

    return metrics
