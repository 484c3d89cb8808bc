"""The webhook channel: POSTs the message as JSON to any HTTP endpoint (`target.address`).

Body: {"id", "key", "kind", "attempt", "target": {...}, "payload": {...}}; the
`Idempotency-Key` header carries the outbox key so a receiver can drop the rare
duplicate a crashed worker causes. Status codes map to the outbox's results:
2xx delivered · 429 retry after Retry-After · 408/5xx/timeouts retry ·
404/410 target gone (disabled) · other 4xx failed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from bot.ingest.safeurl import check_http_url
from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry
from bot.platforms.registry import PlatformContext
from bot.platforms.transport import AiohttpTransport
from bot.types import OutboundMessage, Platform


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds from a Retry-After header: delta-seconds or an HTTP date; None if absent/bad."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def to_body(message: OutboundMessage) -> dict[str, object]:
    t = message.target
    return {
        "id": message.id,
        "key": message.key,
        "kind": str(message.kind),
        "attempt": message.attempt,
        "target": {"id": t.id, "kind": str(t.kind), "workspace": t.workspace},
        "payload": message.payload,
    }


def encode_body(message: OutboundMessage) -> bytes:
    """The JSON bytes httpx's `json=` would send (compact, UTF-8, no NaN)."""
    return json.dumps(
        to_body(message), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    ).encode("utf-8")


class WebhookChannel:
    """Delivers to `target.address` (an http(s) URL) through an injected httpx client,
    or straight through its aiohttp transport (`direct`) when the root has one: the
    same request on the wire, without httpx's per-request models."""

    platform = Platform.WEBHOOK

    def __init__(self, client: httpx.AsyncClient, direct: AiohttpTransport | None = None) -> None:
        self._client = client
        self._direct = direct

    async def _post(self, message: OutboundMessage) -> tuple[int, Mapping[str, str]]:
        headers = {"Idempotency-Key": message.key, "Content-Type": "application/json"}
        if self._direct is not None:
            posted = await self._direct.post(
                message.target.address,
                body=encode_body(message),
                headers=headers,
                limits=self._client.timeout,
            )
            return posted.status, posted.headers
        response = await self._client.post(
            message.target.address, content=encode_body(message), headers=headers
        )
        return response.status_code, response.headers

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        try:
            code, headers = await self._post(message)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol):
            return Failed(f"not an http(s) URL: {message.target.address!r}", disable_target=True)
        except httpx.TimeoutException:
            return Retry("webhook timed out")
        except httpx.TransportError as exc:
            return Retry(f"webhook unreachable: {type(exc).__name__}")
        if 200 <= code < 300:
            return Delivered(headers.get("x-request-id"))
        reason = f"webhook answered HTTP {code}"
        if code == 429:
            return Retry(reason, after=parse_retry_after(headers.get("retry-after")))
        if code == 408 or code >= 500:
            return Retry(reason)
        return Failed(reason, disable_target=code in (404, 410))


async def check_webhook_url(url: str, *, allow_private: bool) -> str:
    """The URL a webhook target may have: http(s), its host public unless allowed."""
    return await check_http_url(url, allow_private=allow_private)


def mask_webhook_url(url: str) -> str:
    """Scheme and host only: a webhook's path and query often are its secret."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return f"{scheme}://{host}/…" if "/" in rest.strip("/") or "?" in rest else url


def build_channel(ctx: PlatformContext) -> WebhookChannel:
    """Registry entry: always on; targets with platform=webhook name their URL."""
    return WebhookChannel(ctx.http, ctx.direct_http)
