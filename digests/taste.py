"""Each recipient's taste for the week's digest: read their marks, train their model,
score the week's papers and pick what they may have missed (bot/taste, pure), as the
builder's `Taste`. Runs in the digest path (the worker's scheduler, `digest send`),
never in ingest; a recipient with too few marks gets None and today's order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from bot.subscriptions.taste import Marks, add_marked, marks_by_person
from bot.taste.features import Corpus
from bot.taste.plan import Signals, rank
from digests.build import MissedPaper, RecipientData, Taste, WeekData

MISSED = 5  # papers in "You may have missed"


def signals_of(data: RecipientData, week: WeekData, marks: Marks) -> Signals:
    """Their marks; the week's papers of their topics and alerts (what the digest sends
    them anyway, so never "missed")."""
    theirs = {p for slug in data.follows for p in week.papers_by_topic.get(slug, ())}
    theirs.update(p.id for a in data.alerts for p in a.papers)
    return Signals(marks.more, marks.less, frozenset(theirs))


def taste_of(
    data: RecipientData, week: WeekData, corpus: Corpus, marks: Marks, *, missed: int = MISSED
) -> Taste | None:
    """One recipient's scores and missed papers; None for a cold start. Pure."""
    ranking = rank(corpus, signals_of(data, week, marks), picks=missed, seed=data.recipient.id)
    if ranking is None:
        return None
    picked = tuple(
        MissedPaper(week.papers[p.paper_id], p.reason.text())
        for p in ranking.picks
        if p.paper_id in week.papers
    )
    return Taste(ranking.scores, picked)


async def with_tastes(
    *,
    session: AsyncSession,
    recipients: Sequence[RecipientData],
    week: WeekData,
    corpus_of: Callable[[], Awaitable[Corpus]],
) -> list[RecipientData]:
    """`recipients`, each with its taste (None where cold), in one read of their marks;
    the week's corpus is loaded (once, by `corpus_of`) only when someone has marks."""
    marks = await marks_by_person(session=session, person_ids=[d.recipient.id for d in recipients])
    if not marks:
        return list(recipients)
    corpus = await corpus_of()
    await add_marked(session=session, corpus=corpus, marks=marks.values())
    out = []
    for data in recipients:
        found = marks.get(data.recipient.id)
        taste = taste_of(data, week, corpus, found) if found is not None else None
        out.append(data if taste is None else _with(data, taste))
    return out


def _with(data: RecipientData, taste: Taste) -> RecipientData:
    return RecipientData(data.recipient, data.follows, data.alerts, taste)
