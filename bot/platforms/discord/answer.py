"""Discord rendering and delivery of `/papers ask` answers.

Rendering is pure: one embed, marked words in bold (`**word**`), everything else
escaped with discord.py's markdown and mention escapers, within the embed limits (title
256, description 4,096). Delivery: ephemeral by default (the deferred "thinking…"
reply becomes the answer); with `post: thread`, the question is posted in the channel,
a thread is opened on it and the answer goes there, while the asker gets a pointer to
it. Every message says allowed_mentions none. If the bot may not post or open threads
there, the asker gets the answer privately with a line saying why.
"""

from __future__ import annotations

import logging
from typing import Any

import discord

from bot.ask.answer import Answer
from bot.ask.extract import Passage
from bot.ask.plain import scope_line
from bot.chat.commands import Reply
from bot.chat.text import cut_text
from bot.platforms.discord.render import DESCRIPTION_MAX, TITLE_MAX

log = logging.getLogger(__name__)

NONE = discord.AllowedMentions.none()
CANNOT_POST = "I could not post or open a thread here; here is the answer for you."
_BRACKETS = str.maketrans({"[": "(", "]": ")"})


def plain(text: str) -> str:
    """Escaped text Discord shows as written: no markdown, no mention."""
    text = " ".join(text.split())
    return discord.utils.escape_mentions(discord.utils.escape_markdown(text))


def marked(passage: Passage) -> str:
    return "".join(f"**{plain(t)}**" if hit else plain(t) for t, hit in passage.segments())


def _link(label: str, url: str) -> str:
    if url.startswith(("https://", "http://")) and len(url) < 500:
        safe = url.replace(" ", "%20").replace("(", "%28").replace(")", "%29")
        return f"[{label}]({safe})"
    return label


def answer_text(answer: Answer) -> str:
    """The embed description: notice, claims, cited papers with passages, more."""
    if not answer.papers:
        return "No paper matches those words. Try other words, or all papers."
    parts: list[str] = []
    if answer.notice:
        parts.append(f"*{plain(answer.notice)}*")
    urls = {p.n: p.url for p in answer.papers}
    for claim in answer.claims:
        cites = "".join(_link(f"[{n}]", urls.get(n, "")) for n in claim.citations)
        parts.append(f"{plain(claim.text)} {cites}")
    papers = []
    for paper in answer.papers:
        title = plain(cut_text(paper.title.text, 200)).translate(_BRACKETS)
        lines = [f"**[{paper.n}]** {_link(title, paper.url)} ({paper.published:%Y-%m-%d})"]
        lines += [f"> {marked(p)}" for p in paper.passages]
        papers.append("\n".join(lines))
    text = "\n".join(parts) + ("\n\n" if parts else "")
    budget = DESCRIPTION_MAX - len(text) - 200
    per_paper = max(300, budget // max(1, len(papers)))
    text += "\n\n".join(cut_text(p, per_paper) for p in papers)
    if answer.more:
        more = f"{answer.more} more paper{'s' if answer.more != 1 else ''} match"
        text += "\n\n" + (_link(more, answer.more_url) if answer.more_url else more)
    return cut_text(text, DESCRIPTION_MAX)


def answer_embed(answer: Answer) -> discord.Embed:
    embed = discord.Embed(
        title=cut_text(plain(f"Q: {answer.question}"), TITLE_MAX),
        description=answer_text(answer),
        colour=discord.Colour.blurple(),
    )
    embed.set_footer(text=cut_text(scope_line(answer), 200))
    return embed


def error_embed(reply: Reply) -> discord.Embed:
    return discord.Embed(title=cut_text(reply.title, TITLE_MAX), colour=discord.Colour.red())


async def _open_thread(
    interaction: discord.Interaction[Any], answer: Answer
) -> discord.PartialMessageable:
    """Post the question in the channel and open a thread on it, by REST alone: no guild
    or channel needs to be in the client's cache."""
    client = interaction.client
    channel = client.get_partial_messageable(
        int(interaction.channel_id or 0), guild_id=interaction.guild_id
    )
    question = cut_text(plain(answer.question), 1800)
    message = await channel.send(
        content=f"Question about {plain(scope_line(answer))}: {question}", allowed_mentions=NONE
    )
    thread = await client.http.start_thread_with_message(
        channel.id,
        message.id,
        name=cut_text(" ".join(answer.question.split()), 90) or "Question",
        auto_archive_duration=1440,
    )
    return client.get_partial_messageable(
        int(thread["id"]), guild_id=interaction.guild_id, type=discord.ChannelType.public_thread
    )


async def deliver_answer(interaction: discord.Interaction[Any], pending: Reply) -> None:
    """Await the answer and send it where the asker chose (the response was deferred)."""
    assert pending.followup is not None
    try:
        final = await pending.followup()
    except Exception:
        log.exception("discord.ask_failed")
        final = Reply(title="Something went wrong on our side: try again in a minute.", error=True)
    if final.answer is None:
        await interaction.followup.send(
            embed=error_embed(final), ephemeral=True, allowed_mentions=NONE
        )
        return
    embed = answer_embed(final.answer)
    if final.thread and interaction.channel_id is not None:
        try:
            where = await _open_thread(interaction, final.answer)
            await where.send(embed=embed, allowed_mentions=NONE)
            await interaction.followup.send(
                content=f"Answer posted in the thread <#{where.id}>.",
                ephemeral=True,
                allowed_mentions=NONE,
            )
            return
        except (discord.HTTPException, ValueError) as exc:
            log.info("discord.ask_thread_refused", extra={"error": type(exc).__name__})
            embed.description = cut_text(f"*{CANNOT_POST}*\n\n{embed.description}", DESCRIPTION_MAX)
    await interaction.followup.send(embed=embed, ephemeral=True, allowed_mentions=NONE)
