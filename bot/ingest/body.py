"""Read a streamed response body within caps on wire bytes and inflated bytes.

httpx would inflate a gzip body in one call per network chunk: a 64 KiB chunk of a gzip
bomb becomes 64 MiB at once. So the raw bytes are read here and inflated with zlib's
`max_length`, never producing more than the cap allows; a body over either cap, or one
labelled gzip that is not, fails its fetch with one line. Peak memory is the cap plus a
chunk, whatever the server sends.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bot.errors import SourceError

# What we ask for (build_client sets Accept-Encoding) and therefore what we can read.
ACCEPT_ENCODING = "gzip, deflate"
_GZIP = zlib.MAX_WBITS | 16  # gzip header and trailer
_ZLIB = zlib.MAX_WBITS  # RFC 1950, what "deflate" should mean
_RAW = -zlib.MAX_WBITS  # bare RFC 1951, what some servers send as "deflate"


@dataclass(frozen=True, slots=True)
class BodyLimits:
    """Caps of one fetch: bytes on the wire and bytes after inflating."""

    max_bytes: int
    max_inflated_bytes: int


class _Inflater:
    """zlib inflation that never yields more than it is allowed to."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._wbits = _GZIP if encoding == "gzip" else _ZLIB
        self._inflate = zlib.decompressobj(self._wbits)
        self._started = False

    def feed(self, data: bytes, room: int) -> bytes:
        """Inflate `data`; returns at most `room + 1` bytes (one more means: over the cap)."""
        out = bytearray()
        while data and len(out) <= room:
            try:
                out += self._inflate.decompress(data, room + 1 - len(out))
            except zlib.error:
                if self.encoding == "deflate" and not self._started and self._wbits == _ZLIB:
                    # Not zlib-wrapped: try bare deflate once, from the first byte.
                    self._wbits = _RAW
                    self._inflate = zlib.decompressobj(_RAW)
                    continue
                raise
            self._started = True
            data = self._inflate.unconsumed_tail
            if self._inflate.eof and self._inflate.unused_data:
                # A gzip body may hold several members one after the other.
                data = self._inflate.unused_data
                self._inflate = zlib.decompressobj(self._wbits)
        return bytes(out)

    @property
    def complete(self) -> bool:
        return self._inflate.eof


async def read_body(
    chunks: AsyncIterator[bytes],
    *,
    encoding: str,
    limits: BodyLimits,
    source: str,
    url: str,
) -> bytes:
    """The body from its raw chunks, inflated; raises SourceError over a cap or when damaged."""
    coding = encoding.strip().lower()
    coding = {"x-gzip": "gzip", "identity": ""}.get(coding, coding)
    if coding not in ("", "gzip", "deflate"):
        raise SourceError(source, f"unsupported Content-Encoding {coding[:40]!r}", url=url)
    inflater = _Inflater(coding) if coding else None
    body = bytearray()
    wire = 0
    async for chunk in chunks:
        wire += len(chunk)
        if wire > limits.max_bytes:
            raise SourceError(
                source, f"body larger than {limits.max_bytes:,} bytes (fetch max bytes)", url=url
            )
        if inflater is None:
            body += chunk
            continue
        try:
            body += inflater.feed(chunk, limits.max_inflated_bytes - len(body))
        except zlib.error as exc:
            raise SourceError(
                source, f"body labelled {coding} is not {coding} ({exc})", url=url
            ) from exc
        if len(body) > limits.max_inflated_bytes:
            raise SourceError(
                source,
                f"body inflates to more than {limits.max_inflated_bytes:,} bytes"
                " (fetch max inflated bytes)",
                url=url,
            )
    if inflater is not None and wire and not inflater.complete:
        raise SourceError(source, f"{coding} body cut short", url=url)
    return bytes(body)
