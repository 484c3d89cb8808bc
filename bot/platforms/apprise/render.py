"""Apprise rendering: outbox payloads → plain-text or markdown messages (pure; no SDK).

Every Apprise service takes a title and a body of limited length (`Limits`, read from
the service at the edge). A PAPER is one message; a PAPER_GROUP or QUIET_SUMMARY is a
head line and one line per paper, packed into as many messages as the limits need, so
EVERY paper is carried (never "and 12 more"). Markdown services get every stored text
backslash-escaped (a title cannot become a link or a heading); every service gets
`@name` broken with a zero-width space, so `@channel` in a title pings nobody.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.chat.text import author_line, cut_at_sentence, cut_text, reason_summary
from bot.types import MessageKind

# CommonMark lets any ASCII punctuation be backslash-escaped; these carry meaning in
# the markdown dialects Apprise targets (Mattermost, Zulip, Telegram MarkdownV2, Teams).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~&=$])")
_MENTION = re.compile(r"@(?=\w)")
ZWSP = "\u200b"


@dataclass(frozen=True, slots=True)
class Limits:
    """One service's limits: body characters, title characters (0: no title field),
    body lines (0: unlimited), and whether it renders markdown."""

    body: int
    title: int = 0
    lines: int = 0
    markdown: bool = False


@dataclass(frozen=True, slots=True)
class Part:
    """One message to hand to Apprise."""

    title: str
    body: str


def escape(text: str, markdown: bool) -> str:
    """Whitespace collapsed, mentions broken, markdown punctuation escaped (if markdown)."""
    text = _MENTION.sub("@" + ZWSP, " ".join(text.split()))
    return _MARKDOWN_SPECIAL.sub(r"\\\1", text) if markdown else text


def safe_url(url: str) -> str:
    """Only http(s) links, with the characters that would end a markdown link encoded."""
    if not url.startswith(("https://", "http://")) or len(url) > 2000:
        return ""
    for ch, code in (("(", "%28"), (")", "%29"), (" ", "%20"), ("<", "%3C"), (">", "%3E")):
        url = url.replace(ch, code)
    return "".join(ch for ch in url if ch.isprintable())


def _cut(text: str, limit: int, markdown: bool) -> str:
    """Cut escaped text without leaving a dangling backslash (a broken escape)."""
    cut = cut_text(text, limit)
    if markdown and cut != text:
        cut = cut[:-1].rstrip("\\") + cut[-1]
    return cut


def _heading(paper: Mapping[str, Any], limit: int, markdown: bool) -> str:
    title = _cut(escape(str(paper.get("title", "")), markdown), limit, markdown)
    url = safe_url(str(paper.get("url", "")))
    if markdown:
        return f"**[{title}]({url})**" if url else f"**{title}**"
    return title


def _why(reasons: Sequence[Mapping[str, Any]], markdown: bool) -> str:
    lines = []
    for reason in list(reasons)[:3]:
        what, terms = reason_summary(reason)
        shown = ", ".join(escape(cut_text(t, 60), markdown) for t in terms[:6])
        lines.append(
            escape(cut_text(what, 200), markdown) + (f" · matched {shown}" if shown else "")
        )
    return "\n".join(lines)


def paper_body(item: Mapping[str, Any], room: int, markdown: bool, *, with_heading: bool) -> str:
    """One paper within `room` characters: heading, facts, why, then as much abstract
    as fits; the link is kept whenever anything is."""
    paper = item.get("paper", {})
    url = safe_url(str(paper.get("url", "")))
    facts = " · ".join(
        f
        for f in (
            escape(cut_text(author_line(paper.get("authors", [])), 300), markdown),
            escape(cut_text(", ".join(paper.get("categories", [])), 120), markdown),
            escape(cut_text(str(paper.get("id", "")), 60), markdown),
        )
        if f
    )
    lines = [_heading(paper, 250, markdown)] if with_heading else []
    lines += [facts, _why(item.get("reasons", []), markdown)]
    if not markdown and url:
        lines.append(url)
    body = "\n".join(line for line in lines if line)
    if len(body) > room:  # a tiny service (SMS): the title and the link, nothing else
        short = [_heading(paper, max(20, room - len(url) - 2), markdown)]
        short += [url] if url and not markdown else []
        return _cut("\n".join(short), room, markdown)
    abstract_room = room - len(body) - 2
    if abstract_room >= 80:
        abstract = escape(cut_at_sentence(str(paper.get("abstract", "")), 900), markdown)
        if abstract:
            body += "\n\n" + _cut(abstract, abstract_room, markdown)
    return body


def paper_line(item: Mapping[str, Any], room: int, markdown: bool) -> str:
    """One paper as one compact line of a group: title (linked), then why."""
    paper = item.get("paper", {})
    url = safe_url(str(paper.get("url", "")))
    reasons = list(item.get("reasons", []))[:2]
    why = "; ".join(escape(cut_text(reason_summary(r)[0], 80), markdown) for r in reasons)
    tail = (f" <{url}>" if url and not markdown else "") + (f" — {why}" if why else "")
    room_for_title = max(20, min(200, room - len(tail) - 8))
    line = "• " + _heading(paper, room_for_title, markdown) + tail
    return _cut(line, room, markdown)


def _topics_of(items: Sequence[Mapping[str, Any]]) -> str:
    names = sorted({reason_summary(r)[0] for i in items for r in i.get("reasons", [])})
    return cut_text(", ".join(names), 300)


def _pack(head: str, lines: list[str], limits: Limits) -> list[str]:
    """Lines packed into bodies within the body and line limits (head in the first)."""
    bodies: list[list[str]] = [[head]]
    for line in lines:
        current = bodies[-1]
        size = sum(len(x) + 1 for x in current) + len(line)
        if size > limits.body or (limits.lines and len(current) >= limits.lines):
            bodies.append([])
        bodies[-1].append(line)
    return ["\n".join(b) for b in bodies if b]


def _titled(title: str, bodies: list[str], limits: Limits) -> list[Part]:
    """Parts with their title in the title field, or as the body's first line when the
    service has none (the body limit already left room for it)."""
    count = len(bodies)
    parts = []
    for index, body in enumerate(bodies, 1):
        label = title + (f" ({index}/{count})" if count > 1 else "")
        if limits.title:
            parts.append(Part(title=cut_text(label, limits.title), body=body))
        else:
            heading = f"**{label}**" if limits.markdown else label
            parts.append(Part(title="", body=f"{heading}\n{body}"))
    return parts


def to_parts(kind: MessageKind, payload: Mapping[str, Any], limits: Limits) -> list[Part]:
    """The messages to send, in order, each within `limits`."""
    markdown = limits.markdown
    title_room = 0 if limits.title else 120  # a title folded into the body takes room
    room = max(40, limits.body - title_room)
    line_room = limits.lines - (0 if limits.title else 1) if limits.lines else 0
    if kind == MessageKind.PAPER:
        paper = payload.get("paper", {})
        if limits.title:
            title = cut_text("New paper: " + " ".join(str(paper.get("title", "")).split()), 250)
            body = paper_body(payload, limits.body, markdown, with_heading=markdown)
            return [Part(title=cut_text(escape(title, False), limits.title), body=body)]
        return [Part(title="", body=paper_body(payload, limits.body, markdown, with_heading=True))]
    items = list(payload.get("items", []))
    topics = _topics_of(items)
    if kind == MessageKind.QUIET_SUMMARY:
        title = f"Held during quiet hours: {len(items)} papers"
    else:
        title = f"{len(items)} new papers"
    head = escape(f"For {topics}:" if topics else "Papers:", markdown)
    lines = [paper_line(item, room, markdown) for item in items]
    bodies = _pack(head, lines, Limits(room, limits.title, line_room, markdown))
    return _titled(escape(title, markdown) if not limits.title else title, bodies, limits)
