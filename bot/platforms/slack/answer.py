"""Slack rendering of `/papers ask` answers (pure): Block Kit in mrkdwn.

Marked words are bold (`*word*`); everything else is escaped (`&`, `<`, `>`, so no
mention, channel ping or link can be forged) and Slack's formatting characters are
swapped for look-alikes so a paper's `*` or a backtick cannot open formatting. Citations
link to the papers; "N more papers match" links to the topic page filtered by the
question. Sections stay within Block Kit's limits.
"""

from __future__ import annotations

from typing import Any

from bot.ask.answer import Answer
from bot.ask.extract import Passage
from bot.ask.plain import scope_line
from bot.chat.commands import Reply
from bot.chat.text import cut_text
from bot.platforms.slack.render import MAX_SECTION, escape, safe_url

_LOOKALIKES = str.maketrans({"*": "∗", "~": "∼", "`": "ˋ"})


def plain(text: str) -> str:
    """Escaped text that Slack shows as written: no markup, no mention, no link."""
    return escape(" ".join(text.split()).translate(_LOOKALIKES))


def marked(passage: Passage) -> str:
    """A passage with its marked words in bold."""
    return "".join(f"*{plain(t)}*" if hit else plain(t) for t, hit in passage.segments())


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": cut_text(text, MAX_SECTION)}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": cut_text(text, 2000)}]}


def answer_blocks(answer: Answer) -> list[dict[str, Any]]:
    """The answer as blocks: question, notice, the model's claims, the cited papers, more."""
    blocks = [
        _section(f"*Q: {plain(cut_text(answer.question, 300))}*"),
        _context(plain(scope_line(answer))),
    ]
    if not answer.papers:
        blocks.append(_section("No paper matches those words. Try other words, or `--all`."))
        return blocks
    if answer.notice:
        blocks.append(_context(":information_source: " + plain(answer.notice)))
    urls = {p.n: safe_url(p.url) for p in answer.papers}
    if answer.claims:
        lines = []
        for claim in answer.claims:
            cites = "".join(
                f"<{urls[n]}|[{n}]>" if urls.get(n) else f"[{n}]" for n in claim.citations
            )
            lines.append(f"{plain(claim.text)} {cites}")
        blocks.append(_section("\n".join(lines)))
    for paper in answer.papers:
        title = plain(cut_text(paper.title.text, 250))
        head = (
            f"*[{paper.n}]* <{urls[paper.n]}|{title}>"
            if urls[paper.n]
            else f"*[{paper.n}]* {title}"
        )
        meta = f"{paper.published:%Y-%m-%d}"
        if paper.authors:
            more = f" +{len(paper.authors) - 2}" if len(paper.authors) > 2 else ""
            meta += " · " + plain(cut_text(", ".join(paper.authors[:2]), 200)) + more
        quotes = "\n".join(f">{marked(p)}" for p in paper.passages)
        blocks.append(_section(f"{head}\n{meta}" + (f"\n{quotes}" if quotes else "")))
    if answer.more:
        more = f"{answer.more} more paper{'s' if answer.more != 1 else ''} match"
        url = safe_url(answer.more_url or "")
        blocks.append(_context(f"<{url}|{more} on the topic page>" if url else more + "."))
    return blocks


def answer_response(reply: Reply) -> dict[str, Any]:
    """A `respond()` body: the answer (ephemeral unless the reply says otherwise)."""
    assert reply.answer is not None
    return {
        "text": cut_text(plain(f"Answer: {reply.answer.question}"), 300),
        "blocks": answer_blocks(reply.answer),
        "response_type": "ephemeral" if reply.ephemeral else "in_channel",
        "replace_original": False,
    }


def thread_parent(reply: Reply) -> dict[str, Any]:
    """The channel message a threaded answer hangs under: the question, nobody pinged."""
    assert reply.answer is not None
    question = plain(cut_text(reply.answer.question, 300))
    head = f"*Question about {plain(scope_line(reply.answer))}:* {question}"
    return {"text": cut_text(f"Question: {question}", 300), "blocks": [_section(head)]}


def thread_reply(reply: Reply) -> dict[str, Any]:
    assert reply.answer is not None
    return {"text": "Answer", "blocks": answer_blocks(reply.answer)}
