"""Slack rendering: outbox payloads → Block Kit messages (pure; no SDK imported).

`to_messages` is what SlackChannel posts and what `papertide demo` previews.

A PAPER is one message. A PAPER_GROUP or QUIET_SUMMARY is one parent message plus
thread replies that together carry EVERY paper (never "and 12 more"). Every text
is escaped for mrkdwn and cut to Block Kit's limits.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bot.chat.commands import Reply
from bot.chat.text import author_line, cut_at_sentence, cut_text, reason_summary, show_mentions
from bot.types import MessageKind, TargetKind

MAX_BLOCKS = 50
MAX_SECTION = 3000
MAX_HEADER = 150
MAX_TOTAL = 12000  # Slack rejects some messages below its documented 50×3,000
UNFOLLOW_ACTION = "papertide_unfollow"
MUTE_ALERT_ACTION = "papertide_mute_alert"
OPEN_ABSTRACT_ACTION = "papertide_open_abstract"  # a link button; the app only acks it
MORE_ACTION = "papertide_more"  # value: the paper id
LESS_ACTION = "papertide_less"
UNDO_REACTION_ACTION = "papertide_undo_reaction"  # value: "more:<paper id>" / "less:<paper id>"
MAX_PAPER_ID = 128  # the paper table's id length; a longer id gets no reaction buttons

SlackMessage = dict[str, Any]  # {"text": fallback, "blocks": [...]}


def escape(text: str) -> str:
    """Slack's three control characters; a title can never ping `<!channel>` or forge a link."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def safe_url(url: str) -> str:
    """Only http(s) links; characters that would end Slack's `<url|text>` are percent-encoded."""
    if not url.startswith(("https://", "http://")):
        return ""
    for ch, code in (("<", "%3C"), (">", "%3E"), ("|", "%7C"), (" ", "%20"), ("\n", "")):
        url = url.replace(ch, code)
    return escape(url)[:2000]


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut_text(text, MAX_SECTION)}}


def _reason_line(reason: Mapping[str, Any]) -> str:
    what, terms = reason_summary(reason)
    bold = ", ".join(f"*{escape(cut_text(t, 80))}*" for t in terms[:8])
    return f"{escape(cut_text(what, 300))}" + (f" · matched {bold}" if bold else "")


def _buttons(
    paper: Mapping[str, Any], reasons: Sequence[Mapping[str, Any]], kind: TargetKind
) -> list[Any]:
    buttons: list[dict[str, Any]] = []
    url = safe_url(str(paper.get("url", "")))
    if url:
        buttons.append(
            {
                "type": "button",
                "action_id": OPEN_ABSTRACT_ACTION,
                "text": {"type": "plain_text", "text": "Abstract"},
                "url": url,
            }
        )
    paper_id = str(paper.get("id", ""))
    if paper_id and len(paper_id) <= MAX_PAPER_ID:
        for action, label in ((MORE_ACTION, "More like this"), (LESS_ACTION, "Less like this")):
            buttons.append(
                {
                    "type": "button",
                    "action_id": action,
                    "value": paper_id,
                    "text": {"type": "plain_text", "text": label},
                }
            )
    topic = next((r for r in reasons if r.get("kind") == "topic"), None)
    if topic is not None:
        value = json.dumps({"slug": str(topic.get("slug", ""))[:128], "k": str(kind)})
        buttons.append(
            {
                "type": "button",
                "action_id": UNFOLLOW_ACTION,
                "value": value,
                "text": {"type": "plain_text", "text": "Unfollow topic"},
            }
        )
    alert = next((r for r in reasons if r.get("kind") == "alert"), None)
    if alert is not None:
        buttons.append(
            {
                "type": "button",
                "action_id": MUTE_ALERT_ACTION,
                "value": str(int(alert.get("id", 0))),
                "text": {"type": "plain_text", "text": "Mute alert"},
            }
        )
    return [{"type": "actions", "elements": buttons}] if buttons else []


def to_blocks(
    item: Mapping[str, Any], target_kind: TargetKind = TargetKind.CHANNEL
) -> list[dict[str, Any]]:
    """One paper and why it was sent: linked title, authors, categories, reasons, abstract."""
    paper = item.get("paper", {})
    reasons = list(item.get("reasons", []))[:5]
    title = escape(cut_text(" ".join(str(paper.get("title", "")).split()), 280))
    url = safe_url(str(paper.get("url", "")))
    heading = f"*<{url}|{title}>*" if url else f"*{title}*"
    facts = [
        escape(cut_text(author_line(paper.get("authors", [])), 600)),
        escape(cut_text(", ".join(paper.get("categories", [])), 300)),
        escape(cut_text(str(paper.get("id", "")), 140)),
    ]
    blocks: list[dict[str, Any]] = [
        _section(heading),
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": " · ".join(f for f in facts if f)}],
        },
    ]
    if reasons:
        blocks.append(_section("\n".join(_reason_line(r) for r in reasons)))
    abstract = cut_at_sentence(str(paper.get("abstract", "")), 900)
    if abstract:
        blocks.append(_section(escape(abstract)))
    return blocks + _buttons(paper, reasons, target_kind)


def _fallback(text: str) -> str:
    return escape(cut_text(" ".join(text.split()), 300))


def _compact_line(item: Mapping[str, Any]) -> str:
    paper = item.get("paper", {})
    title = escape(cut_text(" ".join(str(paper.get("title", "")).split()), 200))
    url = safe_url(str(paper.get("url", "")))
    why = "; ".join(_reason_line(r) for r in list(item.get("reasons", []))[:2])
    return (f"• <{url}|{title}>" if url else f"• {title}") + (f" — {why}" if why else "")


def _compact_messages(items: Sequence[Mapping[str, Any]]) -> list[SlackMessage]:
    """Every item as one line, packed into sections and messages within Slack's limits."""
    messages: list[SlackMessage] = []
    blocks: list[dict[str, Any]] = []
    section: list[str] = []
    total = 0

    def flush_section() -> None:
        nonlocal section
        if section:
            blocks.append(_section("\n".join(section)))
            section = []

    for item in items:
        line = cut_text(_compact_line(item), 1000)
        if section and len("\n".join([*section, line])) > MAX_SECTION - 100:
            flush_section()
        if total + len(line) > MAX_TOTAL - 1000 or len(blocks) >= MAX_BLOCKS - 1:
            flush_section()
            messages.append({"text": "More papers", "blocks": blocks})
            blocks, total = [], 0
        section.append(line)
        total += len(line) + 1
    flush_section()
    if blocks:
        messages.append({"text": "More papers", "blocks": blocks})
    return messages


def _topics_of(items: Sequence[Mapping[str, Any]]) -> str:
    names = {reason_summary(r)[0] for i in items for r in i.get("reasons", [])}
    return escape(cut_text(", ".join(sorted(names)), 600))


def to_messages(
    kind: MessageKind, payload: Mapping[str, Any], target_kind: TargetKind = TargetKind.CHANNEL
) -> list[SlackMessage]:
    """The messages to post, in order; [0] is the parent when there are several."""
    if kind == MessageKind.PAPER:
        title = str(payload.get("paper", {}).get("title", ""))
        return [
            {"text": _fallback(f"New paper: {title}"), "blocks": to_blocks(payload, target_kind)}
        ]
    items = list(payload.get("items", []))
    if kind == MessageKind.QUIET_SUMMARY:
        head = (
            f"*Held during quiet hours: {len(items)} papers* ({_topics_of(items)}), "
            "listed in the thread."
        )
        parent = {
            "text": f"Held during quiet hours: {len(items)} papers",
            "blocks": [_section(head)],
        }
        return [parent, *_compact_messages(items)]
    head = f"*{len(items)} new papers* for {_topics_of(items)}: one per reply in this thread."
    parent = {"text": f"{len(items)} new papers", "blocks": [_section(head)]}
    replies = [
        {
            "text": _fallback(str(i.get("paper", {}).get("title", ""))),
            "blocks": to_blocks(i, target_kind),
        }
        for i in items
    ]
    return [parent, *replies]


def render_pressed(reply: Reply, undo: tuple[str, str] | None) -> dict[str, Any]:
    """A button's private answer ("Noted: more like …"), with an Undo button when given
    (paper id, `more`/`less`)."""
    message = render_reply(reply)
    if undo is not None:
        paper_id, word = undo
        message["blocks"].append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "action_id": UNDO_REACTION_ACTION,
                        "value": f"{word}:{paper_id}",
                        "text": {"type": "plain_text", "text": "Undo"},
                    }
                ],
            }
        )
    return message


def render_reply(reply: Reply) -> dict[str, Any]:
    """A Reply as a response_url message: escaped mrkdwn, sections within Slack's limits."""
    title = f"*{escape(reply.title)}*" if not reply.error else f":warning: {escape(reply.title)}"
    sections: list[str] = [title]
    for line in reply.lines:
        line = show_mentions(cut_text(escape(line), 1000), reply.mentions, "<#{id}>", "<@{id}>")
        if len(sections[-1]) + len(line) + 1 > MAX_SECTION - 50 or len(sections) == 1:
            sections.append(line)
        else:
            sections[-1] += "\n" + line
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": s}} for s in sections[:45]]
    return {
        "text": cut_text(escape(reply.title), 300),
        "blocks": blocks,
        "response_type": "ephemeral" if reply.ephemeral or reply.error else "in_channel",
        "replace_original": False,
    }
