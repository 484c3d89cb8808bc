"""Each recipient's taste for the week's digest: read their marks, train their model
(only when their signals changed since the process last trained it), score the week's
papers and pick what they may have missed for all of them at once (bot/taste, pure), as
the builder's `Taste`. Runs in the digest path (the worker's scheduler, `digest send`),
never in ingest; a recipient with too few marks gets None and today's order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.ext.asyncio import AsyncSession

from bot import collector
from bot.subscriptions.taste import (
    Marks,
    add_marked,
    marks_by_person,
    memory,
    model_key,
    store_models,
    stored_models,
)
from bot.taste.batch import Week, rank_many
from bot.taste.cache import Models
from bot.taste.features import Corpus, IntArray
from bot.taste.model import Model
from bot.taste.plan import Ranking, Reason, Signals, learn
from digests.build import DigestPaper, MissedPaper, RecipientData, Taste, WeekData

MISSED = 5  # papers in "You may have missed"


def signals_of(data: RecipientData, week: WeekData, marks: Marks) -> Signals:
    """Their marks; the week's papers of their topics and alerts (what the digest sends
    them anyway, so never "missed")."""
    shared: dict[frozenset[str], frozenset[str]] = week.derived("theirs", dict)
    theirs = shared.get(data.follows)
    if theirs is None:
        # Readers who follow the same topics share one set (and its rows, batch.Week).
        theirs = frozenset(p for slug in data.follows for p in week.papers_by_topic.get(slug, ()))
        shared[data.follows] = theirs
    caught = {p.id for a in data.alerts for p in a.papers}
    if caught - theirs:
        theirs = theirs | caught
    return Signals(marks.more, marks.less, theirs)


def fingerprint(data: RecipientData, marks: Marks) -> Hashable:
    """What a recipient's model learned from, bar the week's papers: their marks, what
    they follow, their alerts. Unchanged, last week's model ranks this week. Strings,
    ints and tuples only (follows sorted): its repr is the same in every process, so it
    is stored with the model (bot/subscriptions/taste.py `model_key`)."""
    return (marks.more, marks.less, tuple(sorted(data.follows)), tuple(a.id for a in data.alerts))


def taste_of(
    data: RecipientData,
    week: WeekData,
    corpus: Corpus,
    marks: Marks,
    *,
    missed: int = MISSED,
    models: Models | None = None,
) -> Taste | None:
    """One recipient's scores and missed papers; None for a cold start. Pure."""
    [taste] = tastes_of([(data, marks)], week, Week(corpus), missed=missed, models=models)
    return taste


def tastes_of(
    readers: Sequence[tuple[RecipientData, Marks]],
    week: WeekData,
    scored: Week,
    *,
    missed: int = MISSED,
    models: Models | None = None,
) -> list[Taste | None]:
    """Each recipient's taste (None when cold), scored together. A recipient whose
    fingerprint `models` already holds is not retrained. Pure but for the cache."""
    corpus = scored.corpus
    if models is None or models.vocabulary is not corpus.vocabulary:
        models = Models(corpus.vocabulary)  # models of another vocabulary mean nothing here
    warm, where = train_all(readers, week, corpus, models)
    out: list[Taste | None] = [None] * len(readers)
    rows = _Rows(corpus)
    for i, ranking in zip(where, rank_many(scored, warm, picks=missed), strict=True):
        out[i] = _taste(ranking, week, rows)
    return out


def train_all(
    readers: Sequence[tuple[RecipientData, Marks]], week: WeekData, corpus: Corpus, models: Models
) -> tuple[list[tuple[Model, Signals]], list[int]]:
    """Each warm reader's model (kept in `models` when it fits their fingerprint, else
    trained and kept) and signals, and where they are in `readers`. Pure but for the
    cache; `models` must be over `corpus`'s vocabulary."""
    warm: list[tuple[Model, Signals]] = []
    where: list[int] = []
    for i, (data, marks) in enumerate(readers):
        signals = signals_of(data, week, marks)
        if signals.cold:
            continue  # costs nothing: today's order
        model = models.get_or_train(
            data.recipient.id,
            fingerprint(data, marks),
            lambda s=signals, seed=data.recipient.id: learn(corpus, s, seed=seed),  # type: ignore[misc]
        )
        if model is not None:
            warm.append((model, signals))
            where.append(i)
    return warm, where


def _taste(ranking: Ranking, week: WeekData, rows: _Rows) -> Taste:
    shown = rows.shown
    picked = []
    for p in ranking.picks:
        # Readers who share a liked mark share its Reason, so the same pick for the
        # same reason is one MissedPaper, its text formatted once.
        key = (p.paper_id, p.reason)
        missed = shown.get(key)
        if missed is None:
            paper = week.papers.get(p.paper_id)
            if paper is None:
                continue
            missed = shown[key] = MissedPaper(paper, p.reason.text())
        picked.append(missed)
    values = ranking.scores.array
    return Taste(ranking.scores, tuple(picked), top=lambda papers, n: rows.top(values, papers, n))


class _Rows:
    """Each section's papers as corpus rows, remembered per list (the week's orders are
    shared by every reader, digests/build.py `_ranked_in`), so a reader's section is
    ordered by one stable argsort of their scores."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        self._rows: dict[int, tuple[Sequence[DigestPaper], IntArray, bool]] = {}
        self.shown: dict[tuple[str, Reason], MissedPaper] = {}  # see `_taste`

    def top(
        self, values: npt.NDArray[np.floating[Any]], papers: Sequence[DigestPaper], n: int
    ) -> list[DigestPaper]:
        """The best `n` of `papers` by `values` (0.0 without a row), stable."""
        hit = self._rows.get(id(papers))
        if hit is None or hit[0] is not papers:
            if len(self._rows) > 4096:
                self._rows.clear()  # lists of readers with alert hits: not shared
            own = self.corpus.n_docs
            found = np.fromiter(
                (r if r < own else -1 for r in (self.corpus.row.get(p.id, own) for p in papers)),
                dtype=np.int64,
                count=len(papers),
            )
            hit = self._rows[id(papers)] = (papers, found, bool((found >= 0).all()))
        at = hit[1]
        scores = values[at] if hit[2] else np.where(at >= 0, values[at], 0.0)
        return [papers[i] for i in np.argsort(-scores, kind="stable")[:n].tolist()]


async def with_tastes(
    *,
    session: AsyncSession,
    recipients: Sequence[RecipientData],
    week: WeekData,
    corpus_of: Callable[[], Awaitable[Corpus]],
    models: Models | None = None,
) -> list[RecipientData]:
    """`recipients`, each with its taste (None where cold), in one read of their marks;
    the week's corpus is loaded (once, by `corpus_of`) only when someone has marks.
    `models` defaults to the process's (bot/subscriptions/taste.py `memory`). A model
    this process does not hold for the recipient's signals is read from the store when
    one was kept for them (the training job's, `train_tastes`); the models trained here
    are stored (the caller commits)."""
    models = models if models is not None else memory()  # (an empty Models is falsy)
    ready = await _ready(session, recipients, corpus_of, models)
    if ready is None:
        return list(recipients)
    readers, corpus = ready
    with collector.paused():
        found = iter(tastes_of(readers, week, Week(corpus), models=models))
    await _store_fresh(session, models)
    marked = {d.recipient.id for d, _m in readers}
    out = []
    for data in recipients:
        taste = next(found) if data.recipient.id in marked else None
        out.append(data if taste is None else _with(data, taste))
    return out


async def train_tastes(
    *,
    session: AsyncSession,
    recipients: Sequence[RecipientData],
    week: WeekData,
    corpus_of: Callable[[], Awaitable[Corpus]],
    models: Models | None = None,
) -> int:
    """Train the models of `recipients` that neither `models` nor the store holds for
    their signals, and store each one's model (one this process held but the store
    lacked too): `with_tastes` without the scoring, for the training job
    (digests/training.py), so a digest run only reads them. How many were trained."""
    models = models if models is not None else memory()
    ready = await _ready(session, recipients, corpus_of, models)
    if ready is None or models.vocabulary is not ready[1].vocabulary:
        return 0
    readers, corpus = ready
    before = models.trained
    warm, where = train_all(readers, week, corpus, models)
    models.take_fresh()  # all of them are stored below
    data = [readers[i] for i in where]
    await store_models(
        session=session,
        models=[
            (d.recipient.id, model_key(fingerprint(d, m)), model)
            for (d, m), (model, _s) in zip(data, warm, strict=True)
        ],
        vocabulary=models.vocabulary,
    )
    return models.trained - before


async def _ready(
    session: AsyncSession,
    recipients: Sequence[RecipientData],
    corpus_of: Callable[[], Awaitable[Corpus]],
    models: Models,
) -> tuple[list[tuple[RecipientData, Marks]], Corpus] | None:
    """The recipients with marks and their marks, the corpus with their marked papers
    in, and `models` holding every stored model that fits its reader's signals; None
    when nobody has marks."""
    marks = await marks_by_person(session=session, person_ids=[d.recipient.id for d in recipients])
    if not marks:
        return None
    corpus = await corpus_of()
    await add_marked(session=session, corpus=corpus, marks=marks.values())
    readers = [(d, marks[d.recipient.id]) for d in recipients if d.recipient.id in marks]
    if models.vocabulary is corpus.vocabulary:
        prints = {d.recipient.id: fingerprint(d, m) for d, m in readers}
        wanted = {pid: model_key(fp) for pid, fp in prints.items() if models.held(pid) != fp}
        if wanted:
            kept = await stored_models(session=session, wanted=wanted, vocabulary=models.vocabulary)
            for pid, model in kept.items():
                models.keep(pid, prints[pid], model)
    return readers, corpus


async def _store_fresh(session: AsyncSession, models: Models) -> None:
    fresh = models.take_fresh()
    if fresh:
        await store_models(
            session=session,
            models=[(pid, model_key(fp), m) for pid, fp, m in fresh if isinstance(pid, int)],
            vocabulary=models.vocabulary,
        )


def _with(data: RecipientData, taste: Taste) -> RecipientData:
    return RecipientData(data.recipient, data.follows, data.alerts, taste)
