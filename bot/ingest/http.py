"""HTTP for sources: bounded bodies, one deadline per fetch, one shared arXiv limiter.

arXiv asks for one request every few seconds across its API, RSS and OAI-PMH together,
so every arXiv source shares ONE `RateLimiter`. The limiter is held only until a
response's headers arrive: a server that trickles its body slows its own fetch, never
the other arXiv source. Every fetch streams its body within the caps of `body.py` and
ends by `fetch_deadline_seconds` however slowly bytes arrive; retries (stamina) cover
5xx, 429 (honouring Retry-After up to a cap), timeouts and connection errors, and
`stamina.set_testing(True)` removes their sleeps in tests.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import httpx
import stamina

from bot.config import Settings
from bot.errors import SourceError
from bot.ingest.body import ACCEPT_ENCODING, BodyLimits, read_body
from bot.ingest.dates import DateParseError, parse_date
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

ATTEMPTS = 5
ERROR_BODY_BYTES = 64 * 1024  # enough for an error explanation, never a whole page


class RateLimiter:
    """At most one request waiting for its headers, and `delay` seconds between starts."""

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
                # Count from the answer's headers: a slow server still leaves a gap.
                self._last = time.monotonic()


@dataclass(frozen=True, slots=True)
class FetchLimits:
    """What bounds one fetch: body caps, the whole-fetch deadline, the longest Retry-After."""

    body: BodyLimits = field(default_factory=lambda: BodyLimits(32 << 20, 64 << 20))
    deadline_seconds: float = 120.0
    retry_after_max_seconds: float = 60.0
    headers_seconds: float = 30.0  # how long the limiter may wait for one answer's headers


@dataclass
class HttpDeps:
    """What sources need for the network, built once and shared by every source."""

    client: httpx.AsyncClient
    arxiv_limiter: RateLimiter
    limits: FetchLimits = field(default_factory=FetchLimits)


@dataclass(frozen=True, slots=True)
class Fetched:
    """A whole answer: status, final URL, headers and the inflated body."""

    status_code: int
    url: str
    headers: httpx.Headers
    content: bytes


class HttpStatusError(SourceError):
    """A 4xx answer; `body` holds its first bytes, for a source to explain it."""

    def __init__(self, source: str, status: int, *, url: str, body: bytes) -> None:
        super().__init__(source, f"HTTP {status}", url=url)
        self.status = status
        self.body = body


def build_client(
    settings: Settings, transport: httpx.AsyncBaseTransport | None = None
) -> httpx.AsyncClient:
    """The one httpx client of a process: timeouts, User-Agent, redirects."""
    return httpx.AsyncClient(
        timeout=settings.http_timeout_seconds,
        # Only encodings body.py inflates within its caps.
        headers={"User-Agent": settings.user_agent, "Accept-Encoding": ACCEPT_ENCODING},
        follow_redirects=True,
        transport=transport,
        # One connection at a time to arXiv is enforced by the limiter; keep the pool small.
        limits=httpx.Limits(max_connections=4, max_keepalive_connections=2),
    )


def fetch_limits(settings: Settings) -> FetchLimits:
    """The fetch caps and deadlines configured in `settings`."""
    return FetchLimits(
        body=BodyLimits(settings.fetch_max_bytes, settings.fetch_max_inflated_bytes),
        deadline_seconds=settings.fetch_deadline_seconds,
        retry_after_max_seconds=settings.retry_after_max_seconds,
        headers_seconds=settings.http_timeout_seconds,
    )


def build_http(settings: Settings) -> HttpDeps:
    """The HTTP client, the ONE arXiv limiter every source of a process shares, the caps."""
    return HttpDeps(
        client=build_client(settings),
        arxiv_limiter=RateLimiter(settings.arxiv_delay_seconds),
        limits=fetch_limits(settings),
    )


class RetryableStatus(Exception):
    """A 5xx or 429 answer worth another try; `after` is Retry-After in seconds."""

    def __init__(self, status: int, after: float | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.after = after


class SlowHeaders(Exception):
    """No response headers within `headers_seconds` (the limiter is released)."""


def _backoff(exc: Exception) -> bool | float:
    if isinstance(exc, RetryableStatus):
        return exc.after if exc.after is not None else True
    return isinstance(exc, SlowHeaders | httpx.TimeoutException | httpx.TransportError)


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
) -> Fetched:
    """GET `url` with retries; returns 2xx or 304 answers, raises SourceError otherwise."""
    limits = deps.limits
    try:
        async with asyncio.timeout(limits.deadline_seconds):
            async for attempt in stamina.retry_context(
                on=_backoff, attempts=ATTEMPTS, wait_initial=1.0, wait_max=60.0, timeout=None
            ):
                with attempt:
                    return await _get_once(deps, url, source, params, headers, limiter)
    except TimeoutError as exc:
        raise SourceError(
            source, f"no complete answer within {limits.deadline_seconds:g} s (deadline)", url=url
        ) from exc
    except RetryableStatus as exc:
        raise SourceError(source, f"{exc} after {ATTEMPTS} attempts", url=url) from exc
    except (SlowHeaders, httpx.TimeoutException) as exc:
        raise SourceError(source, f"timed out after {ATTEMPTS} attempts", url=url) from exc
    except httpx.TooManyRedirects as exc:
        raise SourceError(source, "too many redirects (a redirect loop?)", url=url) from exc
    except httpx.TransportError as exc:
        raise SourceError(source, f"connection failed: {type(exc).__name__}", url=url) from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise SourceError(source, f"request failed: {type(exc).__name__}", url=url) from exc
    raise AssertionError("unreachable")  # pragma: no cover


async def _get_once(
    deps: HttpDeps,
    url: str,
    source: str,
    params: Mapping[str, str] | None,
    headers: Mapping[str, str] | None,
    limiter: RateLimiter | None,
) -> Fetched:
    request = deps.client.build_request("GET", url, params=params, headers=headers)
    response = await _send(deps, request, limiter)
    try:
        final_url = str(response.url)
        status = response.status_code
        if status == 429 or status >= 500:
            after = retry_after_seconds(response.headers.get("Retry-After"))
            cap = deps.limits.retry_after_max_seconds
            if after is not None and after > cap:
                # Waiting that long would hold the poll: fail now, the next poll retries.
                raise SourceError(
                    source, f"HTTP {status} asks to retry after {after:g} s (cap {cap:g} s)",
                    url=final_url,
                )  # fmt: skip
            log.warning("http.retry", extra={"url": final_url, "status": status})
            raise RetryableStatus(status, after)
        encoding = response.headers.get("content-encoding", "")
        if status >= 400:
            small = BodyLimits(ERROR_BODY_BYTES, ERROR_BODY_BYTES)
            try:
                body = await read_body(
                    response.aiter_raw(), encoding=encoding, limits=small, source=source,
                    url=final_url,
                )  # fmt: skip
            except SourceError:
                body = b""  # the status alone still says what happened
            raise HttpStatusError(source, status, url=final_url, body=body)
        content = await read_body(
            response.aiter_raw(), encoding=encoding, limits=deps.limits.body, source=source,
            url=final_url,
        )  # fmt: skip
        return Fetched(status, final_url, response.headers, content)
    finally:
        await response.aclose()


async def _send(
    deps: HttpDeps, request: httpx.Request, limiter: RateLimiter | None
) -> httpx.Response:
    """Send and wait for the headers only; the shared limiter is held for no longer."""
    if limiter is None:
        return await deps.client.send(request, stream=True)
    async with limiter.slot():
        try:
            async with asyncio.timeout(deps.limits.headers_seconds):
                return await deps.client.send(request, stream=True)
        except TimeoutError as exc:
            raise SlowHeaders(f"no headers within {deps.limits.headers_seconds:g} s") from exc
