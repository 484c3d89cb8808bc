"""A local SMTP catcher for `papertide demo`: every mail it receives becomes an .eml file.

It runs on the caller's event loop (aiosmtpd's protocol on `loop.create_server`), so the
demo needs no thread and no network beyond loopback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiosmtpd.smtp import SMTP, Envelope, Session


@dataclass
class _SaveToFolder:
    folder: Path
    saved: list[Path] = field(default_factory=list)

    async def handle_DATA(self, server: SMTP, session: Session, envelope: Envelope) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{len(self.saved) + 1:04d}.eml"
        content = envelope.original_content or b""
        path.write_bytes(content)
        self.saved.append(path)
        return "250 Message accepted for delivery"


@dataclass
class MailCatcher:
    host: str
    port: int
    handler: _SaveToFolder

    @property
    def saved(self) -> list[Path]:
        return self.handler.saved


@asynccontextmanager
async def catch_mail(folder: Path, host: str = "127.0.0.1") -> AsyncIterator[MailCatcher]:
    """Serve SMTP on a free loopback port until the block ends."""
    handler = _SaveToFolder(folder)
    loop = asyncio.get_running_loop()

    def factory() -> Any:
        return SMTP(handler, hostname="papertide-demo", loop=loop)

    server = await loop.create_server(factory, host=host, port=0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield MailCatcher(host=host, port=port, handler=handler)
    finally:
        server.close()
        await server.wait_closed()
