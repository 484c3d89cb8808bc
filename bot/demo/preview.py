"""Terminal previews of chat messages, for `papertide demo`: what Slack and Discord show.

Reads the exact bodies the adapters would post (Block Kit messages, embed payloads) and
turns them into plain lines, so the preview cannot drift from what is really sent.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def _short(line: str, limit: int = 240) -> str:
    # A preview, not the message: long abstracts are cut here only, never in what is sent.
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _block_lines(block: Mapping[str, Any]) -> Iterable[str]:
    kind = block.get("type")
    if kind == "header":
        yield str(block.get("text", {}).get("text", "")).upper()
    elif kind == "section":
        yield str(block.get("text", {}).get("text", ""))
        for field in block.get("fields", []):
            yield str(field.get("text", ""))
    elif kind == "context":
        yield "  ".join(str(e.get("text", "")) for e in block.get("elements", []))
    elif kind == "actions":
        labels = [str(e.get("text", {}).get("text", "")) for e in block.get("elements", [])]
        yield "  ".join(f"[ {label} ]" for label in labels if label)
    elif kind == "divider":
        yield "─" * 40


def slack_preview(messages: Sequence[Mapping[str, Any]], *, replies_shown: int = 1) -> str:
    """The parent message and the first thread replies, as Slack would lay them out."""
    out: list[str] = []
    for index, message in enumerate(messages):
        if index > replies_shown:
            out.append(f"   … {len(messages) - index} more replies in the thread")
            break
        prefix = "" if index == 0 else "   ↳ "
        for block in message.get("blocks", []):
            for line in _block_lines(block):
                # Slack shows &amp; as &; the escaping itself is what the adapter sends.
                out.extend(prefix + _short(part) for part in html.unescape(line).splitlines())
        out.append("")
    return "\n".join(out).rstrip()


def discord_preview(bodies: Sequence[Mapping[str, Any]], *, embeds_shown: int = 1) -> str:
    """The first embeds of the first message, as Discord would lay them out."""
    out: list[str] = []
    shown = 0
    for body in bodies:
        if body.get("content"):
            out.append(str(body["content"]))
        for embed in body.get("embeds", []):
            if shown == embeds_shown:
                total = sum(len(b.get("embeds", [])) for b in bodies)
                out.append(f"… {total - shown} more embeds")
                return "\n".join(out)
            shown += 1
            out.append(f"▌ {embed.get('title', '')}")
            if embed.get("url"):
                out.append(f"▌ {embed['url']}")
            for line in str(embed.get("description", "")).splitlines():
                out.append(f"▌ {_short(line)}")
            for field in embed.get("fields", []):
                out.append(f"▌ {field.get('name', '')}: {field.get('value', '')}")
            out.append("")
    return "\n".join(out).rstrip()


def alert_previews(kind: str, payload: Mapping[str, Any]) -> tuple[str, str]:
    """(Slack, Discord) terminal previews of one outbox message, as each adapter renders it."""
    from bot.platforms.discord.render import to_payloads
    from bot.platforms.slack.render import to_messages
    from bot.types import MessageKind

    shown = {k: v for k, v in payload.items() if not k.startswith("_")}
    message_kind = MessageKind(kind)
    return (
        slack_preview(to_messages(message_kind, shown)),
        discord_preview(to_payloads(message_kind, shown)),
    )
