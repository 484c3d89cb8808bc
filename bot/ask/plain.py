"""An answer as plain text: the CLI's output, and what a log or a terminal shows (pure).

Marked words stay as they are (plain text has no highlight); citations are `[n]` and each
paper is listed with its arXiv link.
"""

from __future__ import annotations

from bot.ask.answer import Answer


def scope_line(answer: Answer) -> str:
    """`RL for LLM Agents, since 2026-09-01`: where the answer looked."""
    where = answer.topic.name if answer.topic else "all papers"
    if answer.since:
        where += f", since {answer.since:%Y-%m-%d}"
    if answer.until:
        where += f", before {answer.until:%Y-%m-%d}"
    return where


def render_text(answer: Answer) -> str:
    """The whole answer as lines of text."""
    lines = [f"Q: {answer.question}  ({scope_line(answer)})", ""]
    if not answer.papers:
        lines.append("No paper matches those words. Try other words, or --all.")
        return "\n".join(lines) + "\n"
    if answer.notice:
        lines += [f"({answer.notice})", ""]
    for claim in answer.claims:
        cites = "".join(f"[{n}]" for n in claim.citations)
        lines.append(f"{claim.text} {cites}")
    if answer.claims:
        lines.append("")
    for paper in answer.papers:
        lines.append(f"[{paper.n}] {paper.title.text} ({paper.published:%Y-%m-%d})")
        if paper.url:
            lines.append(f"    {paper.url}")
        for passage in paper.passages:
            lines.append(f"    “{passage.text}”")
    if answer.more:
        more = f"{answer.more} more papers match"
        lines += ["", more + (f": {answer.more_url}" if answer.more_url else ".")]
    return "\n".join(lines) + "\n"
