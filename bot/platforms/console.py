"""The console channel: no credentials, writes what would have been sent as readable text.

The default for a fresh install (`papertide serve` with no tokens set) and for
`console` targets; output goes to stdout (`PAPERTIDE_CONSOLE_OUT=-`) or appends to a file.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from bot.outbox.channel import Delivered, DeliveryResult, Retry
from bot.platforms.registry import PlatformContext
from bot.types import MessageKind, OutboundMessage, Platform


def format_message(message: OutboundMessage) -> str:
    """Plain text of one message, as a person would read it."""
    t = message.target
    where = f"{t.platform}:{t.workspace + '/' if t.workspace else ''}{t.address}"
    head = f"--- to {where} [{message.kind}] #{message.id} {message.key}"
    payload = message.payload
    if message.kind is MessageKind.PAPER:
        body = _item_lines(payload)
    elif message.kind in (MessageKind.PAPER_GROUP, MessageKind.QUIET_SUMMARY):
        items = payload.get("items", [])
        lines = [f"{len(items)} papers"]
        for item in items:
            lines.extend("  " + line for line in _item_lines(item))
        body = lines
    else:
        body = [f"To: {payload.get('to', '')}", f"Subject: {payload.get('subject', '')}", ""]
        body.append(str(payload.get("text", "")))
    return "\n".join([head, *body, ""])


def _item_lines(item: dict[str, Any]) -> list[str]:
    paper = item.get("paper", {})
    lines = [f"* {paper.get('title', '')} <{paper.get('url', '')}>"]
    authors = ", ".join(a.get("name", "") for a in paper.get("authors", [])[:5])
    if authors:
        lines.append(f"  {authors}")
    for reason in item.get("reasons", []):
        terms = ", ".join(reason.get("terms", []))
        if reason.get("kind") == "topic":
            what = f"topic {reason.get('name') or reason.get('slug')}"
        else:
            what = f"alert {reason.get('query', '')}"
        lines.append(f"  why: {what}" + (f" (matched: {terms})" if terms else ""))
    return lines


class ConsoleChannel:
    """Writes messages to stdout or to a file instead of sending them."""

    platform = Platform.CONSOLE

    def __init__(self, out: str = "-") -> None:
        self._path = None if out == "-" else Path(out)
        self._lock = asyncio.Lock()

    async def send(self, message: OutboundMessage) -> DeliveryResult:
        text = format_message(message)
        async with self._lock:
            try:
                if self._path is None:
                    sys.stdout.write(text)
                    sys.stdout.flush()
                else:
                    # Small appends; a thread would cost more than the write.
                    with self._path.open("a", encoding="utf-8") as fh:
                        fh.write(text)
            except OSError as exc:
                return Retry(f"console output failed: {exc}")
        return Delivered()


def build_channel(ctx: PlatformContext) -> ConsoleChannel:
    """Registry entry: messages written to PAPERTIDE_CONSOLE_OUT (stdout by default)."""
    return ConsoleChannel(ctx.settings.console_out)
