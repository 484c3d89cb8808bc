"""The one SMTP sink of the tests and benchmarks: a real aiosmtpd server on 127.0.0.1.

`smtp_sink()` runs in the test's own event loop and keeps what it receives (scripted
refusals by address); `python -m tests.support.smtp` runs it as its own process that
only counts (bench/digest.py), printing its port on the first line of stdout.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

from aiosmtpd.smtp import SMTP


class SinkHandler:
    """Records every message; `mail_reply`, `rcpt_replies` (by address) and `data_reply`
    script refusals at each step of the transaction."""

    def __init__(self, *, keep: bool = True) -> None:
        self.keep = keep
        self.count = 0
        self.envelopes: list[Any] = []
        self.rcpt_replies: dict[str, str] = {}
        self.mail_reply: str | None = None  # e.g. "530 5.7.0 Authentication required"
        self.data_reply: str | None = None
        self.protocols: list[SMTP] = []

    async def handle_MAIL(self, server, session, envelope, address, mail_options):  # type: ignore[no-untyped-def]
        if self.mail_reply:
            return self.mail_reply
        envelope.mail_from = address
        envelope.mail_options.extend(mail_options)
        return "250 OK"

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):  # type: ignore[no-untyped-def]
        if address in self.rcpt_replies:
            return self.rcpt_replies[address]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
        if self.data_reply:
            return self.data_reply
        self.count += 1
        if self.keep:
            self.envelopes.append(envelope)
        return "250 2.0.0 queued as 42"

    @property
    def messages(self) -> list[EmailMessage]:
        return [
            message_from_bytes(e.original_content, policy=policy.default)  # type: ignore[misc]
            for e in self.envelopes
        ]

    def drop_connections(self) -> None:
        """Close every open client connection, as a relay dropping idle links would."""
        for proto in self.protocols:
            if proto.transport is not None:
                proto.transport.close()


@asynccontextmanager
async def smtp_sink(*, keep: bool = True) -> AsyncIterator[tuple[SinkHandler, int]]:
    handler = SinkHandler(keep=keep)

    def factory() -> SMTP:
        proto = SMTP(handler, hostname="sink.test", decode_data=False)
        handler.protocols.append(proto)
        return proto

    server = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield handler, port
    finally:
        server.close()
        handler.drop_connections()
        await server.wait_closed()


async def _serve_counting() -> None:
    async with smtp_sink(keep=False) as (_handler, port):
        sys.stdout.write(f"{port}\n")
        sys.stdout.flush()
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(_serve_counting())
