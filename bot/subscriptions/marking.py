"""A person's taste, as chat, buttons, mails and the manage page change it.

Every write goes through `bot.subscriptions.reactions` (the table's one writer); this
module decides WHICH targets a reaction lands on:

- a chat user's click or command: their own user target (created on first use);
- a click under an alert in a channel: the channel's target too, when the channel is one
  of ours (the channel learns its taste);
- a digest link: the person's mailbox target.

It also reads paper references (`2611.01234`, `arXiv:2611.01234v2`, an abs URL, or an
id carried by a button), bounded and checked against the `paper` table, so a forged
button or a typo gets one clear line instead of a row.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.errors import PapertideError
from bot.ingest.sources.arxiv_ids import find_id, split_id
from bot.outbox.targets import find_target, get_or_create_target
from bot.store.models import Paper, Person, Reaction, Target
from bot.store.records import paper_url
from bot.subscriptions import people, reactions, taste
from bot.types import Leaning, Platform, TargetKind

MAX_PAPER_ID = 128  # the `paper.id` column's length


class UnknownPaper(PapertideError):
    """A paper reference that is malformed or names no paper we stored."""


@dataclass(frozen=True, slots=True)
class ChatReactor:
    """Who reacts from chat: the signed request's platform, workspace and user, and the
    channel the click came from ('' for a typed command, which speaks only for the user)."""

    platform: Platform
    workspace: str
    user: str
    channel: str = ""


@dataclass(frozen=True, slots=True)
class ShownReaction:
    """One of a person's reactions as the manage page lists it."""

    target_id: int
    paper_id: str
    title: str
    url: str
    leaning: Leaning
    via: str
    created_at: datetime


def leaning_word(leaning: Leaning) -> str:
    """`more` or `less`: how links, buttons and pages spell a leaning."""
    return "more" if leaning == Leaning.MORE else "less"


def parse_leaning(text: str) -> Leaning | None:
    """`more` / `less` → the Leaning; anything else → None."""
    return {"more": Leaning.MORE, "less": Leaning.LESS}.get(text.strip().lower())


def paper_ref(text: str) -> str | None:
    """The arXiv id without version in `2611.01234v2`, `arXiv:…` or an abs/pdf URL."""
    text = text.strip()
    if not text or len(text) > 300:
        return None
    found = split_id(text) or find_id(text)
    return found[0] if found else None


async def stored_paper(*, session: AsyncSession, paper_id: str) -> Paper:
    """The stored paper of an id a button, link or command carried; UnknownPaper if not.

    The id is checked before the query (bounded, printable) because it arrives from
    outside: a forged button value must not cost more than a primary-key lookup.
    """
    if not paper_id or len(paper_id) > MAX_PAPER_ID or not paper_id.isprintable():
        raise UnknownPaper("That does not name a paper: use an arXiv id like 2611.01234.")
    paper = await session.get(Paper, paper_id)
    if paper is None:
        raise UnknownPaper(f"No paper {paper_id} here yet: papertide only knows papers it stored.")
    return paper


async def _chat_targets(
    session: AsyncSession, who: ChatReactor, *, create: bool
) -> tuple[Target | None, Target | None]:
    if create:
        user: Target | None = await get_or_create_target(
            session=session,
            platform=who.platform,
            workspace=who.workspace,
            address=who.user,
            kind=TargetKind.USER,
        )
    else:
        user = await find_target(
            session=session, platform=who.platform, workspace=who.workspace, address=who.user
        )
    channel = None
    if who.channel:
        # Only a channel we already post to learns: a DM's channel id, or a channel
        # nobody follows anything in, has no target and stays that way.
        found = await find_target(
            session=session, platform=who.platform, workspace=who.workspace, address=who.channel
        )
        channel = found if found is not None and found.kind == TargetKind.CHANNEL else None
    return user, channel


async def react_in_chat(
    *, session: AsyncSession, who: ChatReactor, paper_id: str, leaning: Leaning
) -> Paper:
    """Record the user's reaction (and the channel's, see ChatReactor); the paper."""
    paper = await stored_paper(session=session, paper_id=paper_id)
    user, channel = await _chat_targets(session, who, create=True)
    for target in (user, channel):
        if target is not None and target.id is not None:
            await reactions.react(
                session=session,
                target_id=target.id,
                paper_id=paper.id,
                leaning=leaning,
                via=str(who.platform),
            )
    return paper


async def undo_in_chat(
    *, session: AsyncSession, who: ChatReactor, paper_id: str, leaning: Leaning | None
) -> tuple[Paper, bool]:
    """Undo the user's reaction; the channel's too when it still says `leaning`.

    The channel's row keeps the latest word of anyone in it, so an undo takes it back
    only if nobody said otherwise since. Returns (paper, whether the user had one).
    """
    paper = await stored_paper(session=session, paper_id=paper_id)
    user, channel = await _chat_targets(session, who, create=False)
    had = False
    if user is not None and user.id is not None:
        had = await reactions.unreact(session=session, target_id=user.id, paper_id=paper.id)
    if channel is not None and channel.id is not None and leaning is not None:
        now = await session.scalar(
            select(col(Reaction.leaning)).where(
                col(Reaction.target_id) == channel.id, col(Reaction.paper_id) == paper.id
            )
        )
        if now == int(leaning):
            await reactions.unreact(session=session, target_id=channel.id, paper_id=paper.id)
    return paper, had


async def mailbox_of(*, session: AsyncSession, person: Person) -> Target:
    """The person's mailbox target (where their digest reactions live)."""
    if not person.email:
        raise PapertideError("This address is no longer on our list: nothing to record.")
    return await people.mailbox_of(session=session, person=person)


async def react_by_mail(
    *, session: AsyncSession, person: Person, paper_id: str, leaning: Leaning
) -> tuple[Paper, int]:
    """A digest link's button: the reaction lands on the person's mailbox target.

    Returns the paper and that target's id (the page's Undo names it)."""
    paper = await stored_paper(session=session, paper_id=paper_id)
    mailbox = await mailbox_of(session=session, person=person)
    assert mailbox.id is not None
    await reactions.react(
        session=session, target_id=mailbox.id, paper_id=paper.id, leaning=leaning, via="email"
    )
    return paper, mailbox.id


async def person_reactions(*, session: AsyncSession, person: Person) -> list[ShownReaction]:
    """Every reaction of the person's targets, newest first, with the paper's title."""
    assert person.id is not None
    ids = await reactions.person_target_ids(session=session, person_id=person.id)
    found = await reactions.reactions_of(session=session, target_ids=ids)
    papers = {
        p.id: p
        for p in (
            await session.execute(
                select(Paper).where(col(Paper.id).in_(sorted({r.paper_id for r in found})))
            )
        ).scalars()
    }
    shown = []
    for r in found:
        paper = papers.get(r.paper_id)
        shown.append(
            ShownReaction(
                target_id=r.target_id,
                paper_id=r.paper_id,
                title=" ".join(paper.title.split()) if paper is not None else r.paper_id,
                url=paper_url(r.paper_id, paper.links) if paper is not None else "",
                leaning=r.leaning,
                via=r.via,
                created_at=r.created_at,
            )
        )
    return shown


async def undo_for_person(
    *, session: AsyncSession, person: Person, target_id: int, paper_id: str
) -> bool:
    """The manage page's Undo: only a target the person owns; False when nothing to undo."""
    assert person.id is not None
    if target_id not in await reactions.person_target_ids(session=session, person_id=person.id):
        return False
    return await reactions.unreact(session=session, target_id=target_id, paper_id=paper_id)


async def erase_for_person(*, session: AsyncSession, person: Person) -> int:
    """The manage page's "Erase all reactions": every target the person owns, and the
    ranking model learned from them."""
    assert person.id is not None
    ids = await reactions.person_target_ids(session=session, person_id=person.id)
    await taste.forget_models(session=session, person_ids=[person.id])
    return await reactions.erase_reactions(session=session, target_ids=ids)
