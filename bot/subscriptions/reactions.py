"""The `reaction` table's one writer: "more like this" / "less like this" on a paper.

A reaction belongs to a target (a chat user, a channel, a mailbox); a person's taste is
the reactions of every target they own. Reacting again replaces the sign, `unreact`
undoes, `erase_reactions` forgets them all (the manage page's button). Keyword-only
functions taking an explicit `session`; the caller commits.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.store.dialect import dialect_insert
from bot.store.models import Reaction, Target
from bot.timeutil import utcnow
from bot.types import Leaning


@dataclass(frozen=True, slots=True)
class ReactionRecord:
    """One stored reaction, as readers of taste (ranking, the manage page) see it."""

    target_id: int
    paper_id: str
    leaning: Leaning
    via: str
    created_at: datetime


async def react(
    *, session: AsyncSession, target_id: int, paper_id: str, leaning: Leaning, via: str
) -> bool:
    """Record the reaction; False when the target had already said exactly that.

    One upsert on (target, paper): a double click, a replayed button or two workers
    settle on one row whose sign is the latest word.
    """
    before = await session.scalar(
        select(col(Reaction.leaning)).where(
            col(Reaction.target_id) == target_id, col(Reaction.paper_id) == paper_id
        )
    )
    stmt = dialect_insert(session, Reaction).values(
        target_id=target_id, paper_id=paper_id, leaning=int(leaning), via=via, created_at=utcnow()
    )
    await session.execute(
        stmt.on_conflict_do_update(
            index_elements=["target_id", "paper_id"],
            set_={"leaning": int(leaning), "via": via, "created_at": utcnow()},
        )
    )
    return before != int(leaning)


async def unreact(*, session: AsyncSession, target_id: int, paper_id: str) -> bool:
    """Undo the target's reaction to the paper; False when there was none."""
    result = await session.execute(
        delete(Reaction)
        .where(col(Reaction.target_id) == target_id, col(Reaction.paper_id) == paper_id)
        .returning(col(Reaction.id))
    )
    return result.first() is not None


async def erase_reactions(*, session: AsyncSession, target_ids: Collection[int]) -> int:
    """Forget every reaction of these targets; how many there were."""
    if not target_ids:
        return 0
    result = await session.execute(
        delete(Reaction)
        .where(col(Reaction.target_id).in_(list(target_ids)))
        .returning(col(Reaction.id))
    )
    return len(result.all())


async def reactions_of(
    *, session: AsyncSession, target_ids: Collection[int]
) -> list[ReactionRecord]:
    """The reactions of these targets, newest first."""
    if not target_ids:
        return []
    rows = await session.execute(
        select(Reaction)
        .where(col(Reaction.target_id).in_(list(target_ids)))
        .order_by(col(Reaction.created_at).desc(), col(Reaction.id).desc())
    )
    return [
        ReactionRecord(
            target_id=r.target_id,
            paper_id=r.paper_id,
            leaning=Leaning(r.leaning),
            via=r.via,
            created_at=r.created_at,
        )
        for r in rows.scalars()
    ]


async def person_target_ids(*, session: AsyncSession, person_id: int) -> list[int]:
    """Every target the person owns (their chat users, their mailbox): whose reactions
    make up the person's taste."""
    ids = await session.scalars(select(col(Target.id)).where(col(Target.person_id) == person_id))
    return [i for i in ids if i is not None]
