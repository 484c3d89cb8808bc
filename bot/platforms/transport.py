"""An httpx transport on aiohttp's client: the httpx API, a far cheaper HTTP/1.1 engine.

Workers post thousands of small requests per second; httpcore spends ~1.4 ms of CPU on
each (it re-checks every pooled connection per request), aiohttp's client ~0.15 ms.
Channels keep taking an injected `httpx.AsyncClient`; only the transport changes, so
tests and the rest of papertide still speak httpx. The hottest sender, the webhook
channel, may also `post` through the transport directly: httpx's Request and Response
models (headers, cookies, redirects, auth) cost as much CPU per message as the whole
HTTP exchange on aiohttp, and a JSON POST needs none of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import aiohttp
import httpx

DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class Posted:
    """What a direct `post` got back: the status and the (case-insensitive) headers."""

    status: int
    headers: Mapping[str, str]


@contextmanager
def _as_httpx_errors(request: httpx.Request | None = None) -> Iterator[None]:
    """aiohttp's exceptions as the httpx ones channels already handle."""
    try:
        yield
    except TimeoutError as exc:  # aiohttp's ServerTimeoutError is one too
        raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
    except aiohttp.ClientConnectorError as exc:
        raise httpx.ConnectError(str(exc), request=request) from exc
    except (aiohttp.InvalidURL, aiohttp.NonHttpUrlClientError) as exc:
        raise httpx.UnsupportedProtocol(str(exc), request=request) from exc
    except aiohttp.ClientError as exc:
        raise httpx.RemoteProtocolError(str(exc), request=request) from exc


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends httpx requests through one aiohttp ClientSession (created lazily, in the loop)."""

    def __init__(self, *, max_connections: int = 16) -> None:
        self._limit = max_connections
        self._session: aiohttp.ClientSession | None = None
        self._timeouts: dict[tuple[float | None, float | None], aiohttp.ClientTimeout] = {}

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit),
                auto_decompress=False,  # httpx decodes Content-Encoding itself
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    def _timeout(self, connect: float | None, read: float | None) -> aiohttp.ClientTimeout:
        key = (connect, read)
        found = self._timeouts.get(key)
        if found is None:
            found = self._timeouts[key] = aiohttp.ClientTimeout(
                total=None,
                connect=DEFAULT_TIMEOUT if connect is None else connect,
                sock_read=DEFAULT_TIMEOUT if read is None else read,
            )
        return found

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        timeout = self._timeout(timeouts.get("connect"), timeouts.get("read"))
        body = await request.aread()
        with _as_httpx_errors(request):
            async with self._client().request(
                request.method,
                str(request.url),
                headers=list(request.headers.multi_items()),
                data=body or None,
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                content = await response.read()
                headers = [(k.decode(), v.decode()) for k, v in response.raw_headers]
                return httpx.Response(
                    response.status, headers=headers, content=content, request=request
                )

    async def post(
        self, url: str, *, body: bytes, headers: Mapping[str, str], limits: httpx.Timeout
    ) -> Posted:
        """POST `body` to `url`, no redirects; raises the httpx exceptions the client would."""
        with _as_httpx_errors():
            async with self._client().post(
                url,
                data=body,
                headers=headers,
                timeout=self._timeout(limits.connect, limits.read),
                allow_redirects=False,
            ) as response:
                await response.read()  # the connection goes back to the pool
                return Posted(response.status, response.headers)

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
