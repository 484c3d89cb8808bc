"""Discord rendering: outbox payloads → message bodies with embeds (pure).

`to_payloads` is what DiscordChannel posts and what `papertide demo` previews.

Why httpx and not discord.py's HTTPClient: its base URL is the class constant
`discord.http.Route.BASE` (no per-client setting), and its `request()` sleeps and
retries by itself on 429 (up to `max_ratelimit_timeout`, at least 30 s) and on 5xx; the
outbox owns retries and pacing, so a channel must return Retry(after) instead. This thin
REST client honours `PAPERTIDE_DISCORD_API_URL` and never sleeps. Markdown escaping
comes from discord.py (`discord.utils`), and every message says `allowed_mentions`
none, so `@everyone` in a title pings nobody.

A PAPER_GROUP / QUIET_SUMMARY becomes several messages of up to 10 embeds (6,000
characters in all) that together carry every paper; progress is saved after each
message exactly as the Slack channel does (`payload["_progress"]["sent"]`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from discord.utils import escape_markdown, escape_mentions

from bot.chat.text import author_line, cut_at_sentence, cut_text, reason_summary
from bot.types import MessageKind

TITLE_MAX, DESCRIPTION_MAX, FIELDS_MAX, EMBED_TOTAL = 256, 4096, 25, 6000
EMBEDS_PER_MESSAGE = 10
NO_MENTIONS: dict[str, Any] = {"parse": []}
# Discord JSON error codes meaning the target is gone or closed to us.
GONE_CODES = {10003, 10013, 50001, 50007, 50013}


def clean(text: str, limit: int) -> str:
    """Markdown and mentions escaped, then cut (escaping first so a cut never splits one)."""
    text = escape_mentions(escape_markdown(" ".join(text.split())))
    return cut_text(text, limit)


def _field(name: str, value: str) -> dict[str, Any]:
    return {"name": cut_text(name, 256), "value": value or "—", "inline": False}


def embed_size(embed: Mapping[str, Any]) -> int:
    """Characters Discord counts toward the 6,000 limit."""
    size = len(embed.get("title", "")) + len(embed.get("description", ""))
    size += len(embed.get("footer", {}).get("text", ""))
    return size + sum(len(f["name"]) + len(f["value"]) for f in embed.get("fields", []))


def to_embed(item: Mapping[str, Any]) -> dict[str, Any]:
    """One paper as an embed within Discord's limits (title 256, description 4,096, 6,000 total)."""
    paper = item.get("paper", {})
    why = []
    for reason in list(item.get("reasons", []))[:5]:
        what, terms = reason_summary(reason)
        bold = ", ".join(f"**{clean(t, 80)}**" for t in terms[:8])
        why.append(clean(what, 300) + (f" · matched {bold}" if bold else ""))
    embed: dict[str, Any] = {
        "title": clean(str(paper.get("title", "")), TITLE_MAX),
        "description": clean(cut_at_sentence(str(paper.get("abstract", "")), 1500), 1800),
        "fields": [
            _field("Authors", clean(author_line(paper.get("authors", [])), 600)),
            _field("Categories", clean(", ".join(paper.get("categories", [])), 300)),
            _field("Why", cut_text("\n".join(why), 1024)),
        ][:FIELDS_MAX],
        "footer": {"text": cut_text(str(paper.get("id", "")), 128)},
    }
    url = str(paper.get("url", ""))
    if url.startswith(("https://", "http://")) and len(url) <= 2000:
        embed["url"] = url
    return embed


def _topics_of(items: Sequence[Mapping[str, Any]]) -> str:
    names = {reason_summary(r)[0] for i in items for r in i.get("reasons", [])}
    return clean(", ".join(sorted(names)), 600)


def to_payloads(kind: MessageKind, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Message bodies to post in order; a group is split so every paper is in one of them."""
    if kind == MessageKind.PAPER:
        return [{"embeds": [to_embed(payload)], "allowed_mentions": NO_MENTIONS}]
    items = list(payload.get("items", []))
    head = (
        f"Held during quiet hours: {len(items)} papers ({_topics_of(items)})"
        if kind == MessageKind.QUIET_SUMMARY
        else f"{len(items)} new papers for {_topics_of(items)}"
    )
    bodies: list[dict[str, Any]] = []
    embeds: list[dict[str, Any]] = []
    for item in items:
        embed = to_embed(item)
        total = sum(embed_size(e) for e in embeds)
        if embeds and (
            len(embeds) == EMBEDS_PER_MESSAGE or total + embed_size(embed) > EMBED_TOTAL
        ):
            bodies.append({"embeds": embeds, "allowed_mentions": NO_MENTIONS})
            embeds = []
        embeds.append(embed)
    if embeds:
        bodies.append({"embeds": embeds, "allowed_mentions": NO_MENTIONS})
    if bodies:
        bodies[0]["content"] = cut_text(f"{head} ({len(bodies)} messages):", 1900)
    return bodies
