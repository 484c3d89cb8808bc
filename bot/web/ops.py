"""Operations endpoints: /healthz for orchestrators, /metrics for Prometheus."""

from __future__ import annotations

import inspect
import logging

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from bot.web.common import deps

log = logging.getLogger(__name__)


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


async def get_metrics(request: web.Request) -> web.Response:
    """Prometheus text format from the default registry."""
    response = web.Response(body=generate_latest())
    response.headers["Content-Type"] = CONTENT_TYPE_LATEST
    return response
