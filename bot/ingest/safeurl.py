"""URLs other people hand us: webhook and Apprise targets, library exports to import.

Two guards. `check_host` refuses hosts that are, or resolve to, loopback, private,
link-local, multicast or reserved addresses (cloud metadata at 169.254.169.254, the
database next door), unless PAPERTIDE_ALLOW_PRIVATE_URLS says this install may reach
them (a LAN-only Mattermost, the tests). `fetch_limited` downloads through an aiohttp
connector whose resolver applies the same rule to every address it connects to, so a
DNS answer that changes between the check and the connection, or a redirect to an
internal host, is refused too; the body is read up to a byte limit within a deadline.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import DefaultResolver

from bot.errors import PapertideError

MAX_URL_CHARS = 2048
MAX_REDIRECTS = 3
RESOLVE_SECONDS = 5.0
_LOCAL_NAMES = ("localhost", ".localhost", ".local", ".internal", ".home.arpa")


class UnsafeUrl(PapertideError):
    """A URL we refuse to store or fetch; the message says why, in one line."""


def split_http_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of an http(s) URL, or UnsafeUrl saying what is wrong."""
    url = url.strip()
    if not url or len(url) > MAX_URL_CHARS:
        raise UnsafeUrl(f"a URL must have 1 to {MAX_URL_CHARS} characters")
    if any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise UnsafeUrl("a URL cannot contain spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeUrl(f"not a valid URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise UnsafeUrl(f"only http:// and https:// URLs are accepted, not {scheme or 'none'}://")
    if not parts.hostname:
        raise UnsafeUrl("the URL has no host")
    return scheme, parts.hostname, port or (443 if scheme == "https" else 80)


def is_public_address(address: str) -> bool:
    """True for a globally routable unicast address (IPv4-mapped IPv6 judged as IPv4)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _literal(host: str) -> str | None:
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


async def resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (without blocking the event loop)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(RESOLVE_SECONDS):
            infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, TimeoutError) as exc:
        raise UnsafeUrl(f"cannot resolve host {host!r}") from exc
    return sorted({str(info[4][0]) for info in infos})


async def check_host(
    host: str, port: int, *, allow_private: bool, must_resolve: bool = True
) -> None:
    """Refuse a host that is, or resolves to, a non-public address (unless allowed).

    `must_resolve=False` accepts a name that does not resolve (an Apprise URL whose
    host slot holds a token: the request goes to the service's own public host).
    """
    if allow_private:
        return
    name = host.lower().rstrip(".")
    if name == "localhost" or name.endswith(_LOCAL_NAMES):
        raise UnsafeUrl(f"{host} is a local name (set PAPERTIDE_ALLOW_PRIVATE_URLS to allow)")
    literal = _literal(name)
    try:
        addresses = [literal] if literal else await resolve(name, port)
    except UnsafeUrl:
        if must_resolve:
            raise
        return
    bad = [a for a in addresses if not is_public_address(a)]
    if bad:
        raise UnsafeUrl(
            f"{host} is an internal address ({bad[0]}); set PAPERTIDE_ALLOW_PRIVATE_URLS "
            "to allow it"
        )


async def check_http_url(url: str, *, allow_private: bool) -> str:
    """The URL, stripped, when it is http(s) and its host is public (or allowed)."""
    _, host, port = split_http_url(url)
    await check_host(host, port, allow_private=allow_private)
    return url.strip()


class PublicResolver(AbstractResolver):
    """aiohttp's resolver, keeping only public addresses: checked at connect time."""

    def __init__(self) -> None:
        self._inner = DefaultResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        found = await self._inner.resolve(host, port, family)
        public = [r for r in found if is_public_address(r["host"])]
        if not public:
            raise OSError(f"{host} resolves only to internal addresses")
        return public

    async def close(self) -> None:
        await self._inner.close()


async def fetch_limited(
    url: str,
    *,
    max_bytes: int,
    time_limit: float,
    allow_private: bool,
    headers: dict[str, str] | None = None,
) -> bytes:
    """GET `url` (http/https, at most MAX_REDIRECTS redirects) and return at most
    `max_bytes` bytes within `time_limit` seconds, or UnsafeUrl saying why not."""
    await check_http_url(url, allow_private=allow_private)
    resolver: Any = None if allow_private else PublicResolver()
    connector = aiohttp.TCPConnector(resolver=resolver, limit=2)
    limits = aiohttp.ClientTimeout(total=time_limit)
    try:
        async with (
            aiohttp.ClientSession(connector=connector, timeout=limits) as session,
            session.get(url, headers=headers, max_redirects=MAX_REDIRECTS) as response,
        ):
            for hop in (*response.history, response):
                split_http_url(str(hop.url))  # a redirect to file:// or ftp:// is refused
            if response.status != 200:
                raise UnsafeUrl(f"the server answered HTTP {response.status}")
            declared = response.content_length
            if declared is not None and declared > max_bytes:
                raise UnsafeUrl(f"the file is larger than {max_bytes:,} bytes")
            body = bytearray()
            async for chunk in response.content.iter_chunked(65536):
                body += chunk
                if len(body) > max_bytes:
                    raise UnsafeUrl(f"the file is larger than {max_bytes:,} bytes")
            return bytes(body)
    except TimeoutError as exc:
        raise UnsafeUrl(f"the download took longer than {time_limit:g} s") from exc
    except aiohttp.TooManyRedirects as exc:
        raise UnsafeUrl(f"more than {MAX_REDIRECTS} redirects") from exc
    except (aiohttp.ClientError, OSError) as exc:
        raise UnsafeUrl(f"the download failed: {exc}"[:300]) from exc
