"""A counting SMTP sink (aiosmtpd) for bench/digest.py, run as its own process.

Prints its port on the first line of stdout, then serves until killed.
"""

from __future__ import annotations

import asyncio
import sys

from aiosmtpd.smtp import SMTP


class Count:
    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0

    async def handle_DATA(self, server, session, envelope):  # type: ignore[no-untyped-def]
        self.messages += 1
        self.bytes += len(envelope.original_content or b"")
        return "250 OK"


async def main() -> None:
    handler = Count()
    server = await asyncio.get_running_loop().create_server(
        lambda: SMTP(handler, hostname="sink.bench"), "127.0.0.1", 0
    )
    sys.stdout.write(f"{server.sockets[0].getsockname()[1]}\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
