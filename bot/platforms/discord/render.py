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
from typing import Any, NamedTuple

from discord.utils import escape_markdown, escape_mentions

from bot.chat.text import author_line, cut_at_sentence, cut_text, reason_summary
from bot.types import MessageKind

TITLE_MAX, DESCRIPTION_MAX, FIELDS_MAX, EMBED_TOTAL = 256, 4096, 25, 6000
EMBEDS_PER_MESSAGE = 10
NO_MENTIONS: dict[str, Any] = {"parse": []}
# Discord JSON error codes meaning the target is gone or closed to us.
GONE_CODES = {10003, 10013, 50001, 50007, 50013}
# "More / Less like this" buttons: custom_id `papertide:<verb>:<paper id>`, at most
# CUSTOM_ID_MAX characters (Discord's limit); a paper whose id does not fit gets none.
CUSTOM_ID_PREFIX = "papertide:"
CUSTOM_ID_MAX = 100
VERBS = ("more", "less", "undo-more", "undo-less")
BUTTON_LABEL_MAX = 80
ACTION_ROW, BUTTON, SECONDARY = 1, 2, 2


class ButtonPress(NamedTuple):
    """What a button's custom_id says: the verb and the paper id (still unchecked)."""

    verb: str
    paper_id: str


def custom_id(verb: str, paper_id: str) -> str | None:
    """`papertide:more:2611.01234`, or None when it would pass Discord's 100 characters."""
    value = f"{CUSTOM_ID_PREFIX}{verb}:{paper_id}"
    return value if len(value) <= CUSTOM_ID_MAX and verb in VERBS and paper_id else None


def read_custom_id(value: str) -> ButtonPress | None:
    """The inverse of `custom_id`; None for anything we did not make."""
    if not value.startswith(CUSTOM_ID_PREFIX) or len(value) > CUSTOM_ID_MAX:
        return None
    verb, sep, paper_id = value.removeprefix(CUSTOM_ID_PREFIX).partition(":")
    return ButtonPress(verb, paper_id) if sep and verb in VERBS and paper_id else None


def _button(label: str, verb: str, paper_id: str) -> dict[str, Any] | None:
    ident = custom_id(verb, paper_id)
    if ident is None:
        return None
    return {
        "type": BUTTON,
        "style": SECONDARY,
        "label": cut_text(label, BUTTON_LABEL_MAX),
        "custom_id": ident,
    }


def reaction_rows(papers: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Action rows with "More / Less like this" for each paper of one message.

    One paper: two plain buttons. Several (a group message holds up to 10): the label
    names the paper, two papers per row, so ten papers fill Discord's five rows.
    """
    buttons: list[dict[str, Any]] = []
    for paper in papers:
        pid = str(paper.get("id", ""))
        name = "" if len(papers) == 1 else ": " + " ".join(str(paper.get("title", "")).split())
        for label, verb in (("More like this", "more"), ("Less like this", "less")):
            button = _button(label + name, verb, pid)
            if button is not None:
                buttons.append(button)
    rows = [buttons[i : i + 4] for i in range(0, len(buttons), 4)][:5]
    return [{"type": ACTION_ROW, "components": row} for row in rows]


def undo_row(verb: str, paper_id: str) -> list[dict[str, Any]]:
    """The Undo under a button's private answer (`verb` is `more` or `less`)."""
    button = _button("Undo", f"undo-{verb}", paper_id)
    return [{"type": ACTION_ROW, "components": [button]}] if button is not None else []


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


def _with_buttons(body: dict[str, Any], papers: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    rows = reaction_rows(papers)
    return {**body, "components": rows} if rows else body


def to_payloads(kind: MessageKind, payload: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Message bodies to post in order; a group is split so every paper is in one of them."""
    if kind == MessageKind.PAPER:
        body = {"embeds": [to_embed(payload)], "allowed_mentions": NO_MENTIONS}
        return [_with_buttons(body, [payload.get("paper", {})])]
    items = list(payload.get("items", []))
    head = (
        f"Held during quiet hours: {len(items)} papers ({_topics_of(items)})"
        if kind == MessageKind.QUIET_SUMMARY
        else f"{len(items)} new papers for {_topics_of(items)}"
    )
    bodies: list[dict[str, Any]] = []
    embeds: list[dict[str, Any]] = []
    shown: list[Mapping[str, Any]] = []
    for item in items:
        embed = to_embed(item)
        total = sum(embed_size(e) for e in embeds)
        if embeds and (
            len(embeds) == EMBEDS_PER_MESSAGE or total + embed_size(embed) > EMBED_TOTAL
        ):
            bodies.append(_with_buttons({"embeds": embeds, "allowed_mentions": NO_MENTIONS}, shown))
            embeds, shown = [], []
        embeds.append(embed)
        shown.append(item.get("paper", {}))
    if embeds:
        bodies.append(_with_buttons({"embeds": embeds, "allowed_mentions": NO_MENTIONS}, shown))
    if bodies:
        bodies[0]["content"] = cut_text(f"{head} ({len(bodies)} messages):", 1900)
    return bodies
