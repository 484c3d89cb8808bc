"""HTTP for sources: one shared arXiv limiter, retries with backoff and jitter.

arXiv asks for one request every few seconds and one connection at a time across its
API, RSS and OAI-PMH together, so every arXiv source shares ONE `RateLimiter`.
Retries (stamina) cover 5xx, 429 (honouring Retry-After), timeouts and connection
errors; `stamina.set_testing(True)` removes the sleeps in tests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import stamina

from bot.config import Settings
from bot.errors import SourceError
from bot.ingest.dates import DateParseError, parse_date
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

ATTEMPTS = 5
MAX_RETRY_AFTER_SECONDS = 300.0


class RateLimiter:
    """At most one request in flight, and `delay` seconds between request starts."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self._lock = asyncio.Lock()
        self._last = float("-inf")

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._lock:
            wait = self._last + self.delay - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                yield
            finally:
                # Count from the end of the request: a slow response still leaves a gap.
                self._last = time.monotonic()


@dataclass
class HttpDeps:
    """What sources need for the network, built once and shared by every source."""

    client: httpx.AsyncClient
    arxiv_limiter: RateLimiter


def build_client(
    settings: Settings, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """The one httpx client of a process: timeouts, User-Agent, redirects."""
    return httpx.AsyncClient(
        timeout=settings.http_timeout_seconds,
        headers={"User-Agent": settings.user_agent},
        follow_redirects=True,
        transport=transport,
        # One connection at a time to arXiv is enforced by the limiter; keep the pool small.
        limits=httpx.Limits(max_connections=4, max_keepalive_connections=2),
    )


class RetryableStatus(Exception):
    """A 5xx or 429 answer worth another try; `after` is Retry-After in seconds."""

    def __init__(self, status: int, after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.after = after


def _backoff(exc: Exception) -> bool | float:
    if isinstance(exc, RetryableStatus):
        return min(exc.after, MAX_RETRY_AFTER_SECONDS) if exc.after is not None else True
    return isinstance(exc, httpx.TimeoutException | httpx.TransportError)


def retry_after_seconds(value: str | None) -> float | None:
    """Retry-After as seconds: delta-seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        return max(0.0, (parse_date(value) - utcnow()).total_seconds())
    except DateParseError:
        return None


async def fetch(
    deps: HttpDeps,
    url: str,
    *,
    source: str,
    params: Mapping[str, str] | None = None,
    headers: Mapping[str, str] | None = None,
    limiter: RateLimiter | None = None,
) -> httpx.Response:
    """GET `url` with retries; returns 2xx or 304 responses, raises SourceError otherwise."""
    try:
        async for attempt in stamina.retry_context(
            on=_backoff, attempts=ATTEMPTS, wait_initial=1.0, wait_max=60.0, timeout=None
        ):
            with attempt:
                return await _get_once(deps, url, source, params, headers, limiter)
    except RetryableStatus as exc:
        raise SourceError(source, f"{exc} after {ATTEMPTS} attempts", url=url) from exc
    except httpx.TimeoutException as exc:
        raise SourceError(source, f"timed out after {ATTEMPTS} attempts", url=url) from exc
    except httpx.TransportError as exc:
        raise SourceError(source, f"connection failed: {type(exc).__name__}", url=url) from exc
    raise AssertionError("unreachable")  # pragma: no cover


async def _get_once(
    deps: HttpDeps,
    url: str,
    source: str,
    params: Mapping[str, str] | None,
    headers: Mapping[str, str] | None,
    limiter: RateLimiter | None,
) -> httpx.Response:
    if limiter is None:
        response = await deps.client.get(url, params=params, headers=headers)
    else:
        async with limiter.slot():
            response = await deps.client.get(url, params=params, headers=headers)
    if response.status_code == 429 or response.status_code >= 500:
        after = retry_after_seconds(response.headers.get("Retry-After"))
        log.warning("http.retry", extra={"url": str(response.url), "status": response.status_code})
        raise RetryableStatus(response.status_code, after)
    if response.status_code >= 400:
        raise SourceError(source, f"HTTP {response.status_code}", url=str(response.url))
    return response
