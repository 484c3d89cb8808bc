"""`/papers suggest`: the person's top papers of the last seven days that they were not
sent, each with its reason, learned from what they marked more or less like.

The person is the one who typed it, wherever they type it (their chat user, and every
target they own once their accounts are linked). A cold start (fewer than two marks)
says how to teach it, rather than guessing.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from bot.chat.context import CommandContext, CommandDeps, Refusal, Reply, target_for
from bot.subscriptions.reactions import person_target_ids
from bot.subscriptions.taste import suggest as suggest_papers
from bot.taste.plan import MIN_MARKS


async def suggest(
    session: AsyncSession, ctx: CommandContext, args: list[str], deps: CommandDeps
) -> Reply:
    """Train the person's model on their marks, answer with its best unseen papers."""
    if args:
        raise Refusal(f"Type `{deps.command} suggest` (it takes nothing else).")
    target = await target_for(session, ctx, deps, personal=True, change=False)
    owned = [target.id or 0]
    if target.person_id is not None:
        owned = await person_target_ids(session=session, person_id=target.person_id) or owned
    found = await suggest_papers(session=session, target_ids=owned, now=deps.now())
    if found.cold:
        return Reply(
            title="I don't know your taste yet.",
            lines=(
                f"Mark at least {MIN_MARKS} papers with `{deps.command} more <arXiv id>` or "
                f"`{deps.command} less <arXiv id>` (or the buttons under each paper), then ask "
                "again: suggestions come from what you mark, your topics and your alerts.",
            ),
        )
    if not found.papers:
        return Reply(title="Nothing new for you this week beyond what you were already sent.")
    lines = tuple(f"{p.title} ({p.url}) — {p.reason}" for p in found.papers)
    return Reply(title="Papers of the last seven days you may like", lines=lines)
