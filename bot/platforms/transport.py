"""An httpx transport on aiohttp's client: the httpx API, a far cheaper HTTP/1.1 engine.

Workers post thousands of small requests per second; httpcore spends ~1.4 ms of CPU on
each (it re-checks every pooled connection per request), aiohttp's client ~0.15 ms.
Channels keep taking an injected `httpx.AsyncClient`; only the transport changes, so
tests and the rest of papertide still speak httpx.
"""

from __future__ import annotations

import aiohttp
import httpx

DEFAULT_TIMEOUT = 10.0


class AiohttpTransport(httpx.AsyncBaseTransport):
    """Sends httpx requests through one aiohttp ClientSession (created lazily, in the loop)."""

    def __init__(self, *, max_connections: int = 16) -> None:
        self._limit = max_connections
        self._session: aiohttp.ClientSession | None = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self._limit),
                auto_decompress=False,  # httpx decodes Content-Encoding itself
                skip_auto_headers=("User-Agent", "Accept-Encoding", "Content-Type"),
            )
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeouts = request.extensions.get("timeout", {})
        timeout = aiohttp.ClientTimeout(
            total=None,
            connect=timeouts.get("connect", DEFAULT_TIMEOUT),
            sock_read=timeouts.get("read", DEFAULT_TIMEOUT),
        )
        body = await request.aread()
        try:
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
        except TimeoutError as exc:  # aiohttp's ServerTimeoutError is one too
            raise httpx.ReadTimeout(str(exc) or "timed out", request=request) from exc
        except aiohttp.ClientConnectorError as exc:
            raise httpx.ConnectError(str(exc), request=request) from exc
        except aiohttp.InvalidURL as exc:
            raise httpx.UnsupportedProtocol(str(exc), request=request) from exc
        except aiohttp.ClientError as exc:
            raise httpx.RemoteProtocolError(str(exc), request=request) from exc

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
