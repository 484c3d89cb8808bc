"""`/papers more|less|unmark <arXiv id>` and the "More / Less like this" buttons.

A typed command speaks for the person who typed it only (their user target); a button
under an alert in a channel also teaches the channel (bot.subscriptions.marking decides).
Both answer privately; a button's answer carries an Undo that the adapter renders.
A command's reply names the paper by id and shows its title as a code span; a button's
reply says "Noted: more like <title>" in plain words, which each adapter escapes for
its medium.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.context import CommandContext, CommandDeps, Refusal, Reply
from bot.chat.text import cut_text
from bot.subscriptions.marking import (
    ChatReactor,
    UnknownPaper,
    leaning_word,
    paper_ref,
    react_in_chat,
    undo_in_chat,
)
from bot.types import Leaning

log = logging.getLogger(__name__)

TITLE_CHARS = 200
FORGED = Reply(
    title="This button names no paper we know (an old or altered message?): nothing changed.",
    error=True,
)


@dataclass(frozen=True, slots=True)
class Pressed:
    """A button's answer: the reply, and what its Undo button undoes (None: no Undo)."""

    reply: Reply
    undo: tuple[str, Leaning] | None = None


def _reactor(ctx: CommandContext, *, with_channel: bool) -> ChatReactor:
    return ChatReactor(
        platform=ctx.platform,
        workspace=ctx.workspace,
        user=ctx.user,
        channel=ctx.channel if with_channel and not ctx.is_dm else "",
    )


def _title(text: str) -> str:
    return cut_text(" ".join(text.split()), TITLE_CHARS)


def _quoted(text: str) -> str:
    """The title as a code span: neither Slack nor Discord reads markdown or mentions
    inside one (the adapters still escape `&<>` for Slack), so a title shows as written."""
    return "`" + _title(text).replace("`", "'") + "`"


def _paper_id(args: list[str], deps: CommandDeps, verb: str) -> str:
    if len(args) != 1:
        raise Refusal(f"Type `{deps.command} {verb} <arXiv id>`, e.g. `{verb} 2611.01234`.")
    found = paper_ref(args[0])
    if found is None:
        raise Refusal(
            f"`{args[0][:60]}` is not an arXiv id: type e.g. `2611.01234` or its abs link."
        )
    return found


async def _mark(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps, leaning: Leaning
) -> Reply:
    word = leaning_word(leaning)
    paper_id = _paper_id(args, deps, word)
    try:
        paper = await react_in_chat(
            session=session, who=_reactor(ctx, with_channel=False), paper_id=paper_id,
            leaning=leaning,
        )  # fmt: skip
    except UnknownPaper as exc:
        raise Refusal(str(exc)) from exc
    log.info("chat.react", extra={"paper_id": paper.id, "leaning": word})
    return Reply(
        title=f"Noted: {word} like {paper.id}",
        lines=(_quoted(paper.title), f"`{deps.command} unmark {paper.id}` takes it back."),
    )


async def more(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    return await _mark(session, ctx, args, deps, Leaning.MORE)


async def less(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    return await _mark(session, ctx, args, deps, Leaning.LESS)


async def unmark(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    paper_id = _paper_id(args, deps, "unmark")
    try:
        paper, had = await undo_in_chat(
            session=session, who=_reactor(ctx, with_channel=False), paper_id=paper_id,
            leaning=None,
        )  # fmt: skip
    except UnknownPaper as exc:
        raise Refusal(str(exc)) from exc
    if not had:
        raise Refusal(f"You had not marked {paper.id}: nothing to undo.")
    return Reply(title=f"Undone: no more or less like {paper.id}", lines=(_quoted(paper.title),))


async def press(
    session: AsyncSession, ctx: CommandContext, paper_id: str, leaning: Leaning, *, undo: bool
) -> Pressed:
    """A "More / Less like this" button (or its Undo) pressed by `ctx.user` in `ctx.channel`.

    `paper_id` comes from the button's value and is checked (it may be forged); who
    reacts comes from the platform's signed request, never from the value.
    """
    who = _reactor(ctx, with_channel=True)
    word = leaning_word(leaning)
    try:
        if undo:
            paper, _had = await undo_in_chat(
                session=session, who=who, paper_id=paper_id, leaning=leaning
            )
            return Pressed(Reply(title=f"Undone: no longer {word} like {_title(paper.title)}"))
        paper = await react_in_chat(session=session, who=who, paper_id=paper_id, leaning=leaning)
    except UnknownPaper:
        log.warning("chat.react_bad_button", extra={"value": paper_id[:140]})
        return Pressed(FORGED)
    log.info("chat.react_button", extra={"paper_id": paper.id, "leaning": word})
    return Pressed(
        Reply(title=f"Noted: {word} like {_title(paper.title)}"), undo=(paper.id, leaning)
    )
