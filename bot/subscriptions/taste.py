"""A person's taste, read from the store: their marks (bot/subscriptions/reactions.py),
what they follow and what their alerts caught, and the papers' text as a
`bot.taste.Corpus`. Read → plan (`bot.taste.plan.rank`, pure) → an answer. Models are
trained when needed (the digest run in the worker, `/papers suggest`), never in ingest;
the process keeps one vocabulary and the digest readers' models (`memory()`), and the
`taste_model` table's one writer is here (`store_models`): a model is kept with the
fingerprint of the signals it learned from, so no process, nor this one after a
restart, trains a reader again until their signals change.
"""

from __future__ import annotations

import functools
import hashlib
from collections import defaultdict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from bot.outbox.queue import message_key
from bot.store.dialect import dialect_insert
from bot.store.models import (
    Alert,
    AlertMatch,
    OutboxRow,
    Paper,
    PaperTopic,
    Person,
    Reaction,
    Subscription,
    Target,
    TasteModel,
)
from bot.store.records import paper_url
from bot.subscriptions.reactions import ReactionRecord, reactions_of
from bot.taste.cache import Models
from bot.taste.features import Corpus, Vocabulary
from bot.taste.model import Model, pack, unpack
from bot.taste.plan import MIN_MARKS, Signals, rank
from bot.timeutil import utcnow
from bot.types import EmailStatus, Leaning, MessageKind

CHUNK = 1000  # ids per IN (…) list
WRITE_CHUNK = 200  # models per INSERT (a model is a few KB)
WEEK = timedelta(days=7)
MAX_CORPUS = 3000  # newest papers of the week `/papers suggest` considers
SUGGESTIONS = 5


@dataclass(frozen=True, slots=True)
class Marks:
    """A person's reactions as paper ids, newest first; a paper's newest word counts."""

    more: tuple[str, ...] = ()
    less: tuple[str, ...] = ()

    @property
    def ids(self) -> frozenset[str]:
        return frozenset(self.more) | frozenset(self.less)


def fold_marks(records: Iterable[ReactionRecord]) -> Marks:
    """Newest-first records (as `reactions_of` returns them) → Marks; two targets of one
    person that disagree about a paper: the newer reaction wins."""
    more: list[str] = []
    less: list[str] = []
    seen: set[str] = set()
    for r in records:
        if r.paper_id not in seen:
            seen.add(r.paper_id)
            (more if r.leaning is Leaning.MORE else less).append(r.paper_id)
    return Marks(tuple(more), tuple(less))


async def paper_texts(
    *, session: AsyncSession, paper_ids: Collection[str]
) -> list[tuple[str, str]]:
    """(id, title + abstract) of the stored papers among `paper_ids`, by id."""
    ids = sorted(set(paper_ids))
    found: list[tuple[str, str]] = []
    for i in range(0, len(ids), CHUNK):
        rows = await session.execute(
            select(col(Paper.id), col(Paper.title), col(Paper.abstract))
            .where(col(Paper.id).in_(ids[i : i + CHUNK]))
            .order_by(col(Paper.id))
        )
        found += [(pid, f"{title}\n{abstract}") for pid, title, abstract in rows]
    return found


@functools.cache
def memory() -> Models:
    """The process's vocabulary and kept models (one per process: a model's columns
    mean the words of this vocabulary)."""
    return Models(Vocabulary())


async def load_corpus(*, session: AsyncSession, paper_ids: Collection[str]) -> Corpus:
    """The papers a ranking may order (a week's), as tf-idf rows over the process's
    vocabulary."""
    texts = await paper_texts(session=session, paper_ids=paper_ids)
    return Corpus(texts, memory().vocabulary)


async def add_marked(*, session: AsyncSession, corpus: Corpus, marks: Iterable[Marks]) -> None:
    """Bring marked papers from earlier weeks into `corpus` (the model trains on them)."""
    missing = {p for m in marks for p in m.ids if p not in corpus.row}
    if missing:
        corpus.add(await paper_texts(session=session, paper_ids=missing))


def model_key(fingerprint: Hashable) -> str:
    """A fingerprint as stored: sha256 of its repr (callers build it from strings,
    ints and tuples only, so the repr is the same in every process)."""
    return hashlib.sha256(repr(fingerprint).encode()).hexdigest()


async def stored_models(
    *, session: AsyncSession, wanted: Mapping[int, str], vocabulary: Vocabulary
) -> dict[int, Model]:
    """The stored models of the people in `wanted` whose stored fingerprint is the one
    wanted (`model_key`), over `vocabulary`."""
    ids = sorted(wanted)
    found: dict[int, Model] = {}
    for i in range(0, len(ids), CHUNK):
        rows = await session.execute(
            select(
                col(TasteModel.person_id), col(TasteModel.fingerprint), col(TasteModel.model)
            ).where(col(TasteModel.person_id).in_(ids[i : i + CHUNK]))
        )
        for pid, key, blob in rows:
            if blob and wanted[pid] == key:  # empty: considered, nothing to learn
                found[pid] = unpack(blob, vocabulary)
    return found


async def people_to_train(*, session: AsyncSession) -> list[int]:
    """Digest recipients (confirmed) with enough marks to learn from who reacted since
    their model was stored, or have none stored: whom the training job trains."""
    newest = (
        select(col(Target.person_id).label("person_id"), func.max(Reaction.created_at).label("at"))
        .join(Reaction, col(Reaction.target_id) == col(Target.id))
        .where(col(Target.person_id).is_not(None))
        .group_by(col(Target.person_id))
        .having(func.count() >= MIN_MARKS)
        .subquery()
    )
    rows = await session.scalars(
        select(newest.c.person_id)
        .join(Person, col(Person.id) == newest.c.person_id)
        .outerjoin(TasteModel, col(TasteModel.person_id) == newest.c.person_id)
        .where(
            col(Person.email_status) == EmailStatus.CONFIRMED,
            or_(col(TasteModel.person_id).is_(None), newest.c.at > col(TasteModel.trained_at)),
        )
        .order_by(newest.c.person_id)
    )
    return [int(p) for p in rows]


async def store_models(
    *,
    session: AsyncSession,
    models: Sequence[tuple[int, str, Model]],
    vocabulary: Vocabulary,
) -> None:
    """Keep each (person, fingerprint key, model), replacing what they had. The caller
    commits (a digest run, with the batch it enqueued)."""
    now = utcnow()
    rows = [
        {"person_id": pid, "fingerprint": key, "model": pack(model, vocabulary), "trained_at": now}
        for pid, key, model in models
    ]
    for i in range(0, len(rows), WRITE_CHUNK):
        stmt = dialect_insert(session, TasteModel).values(rows[i : i + WRITE_CHUNK])
        await session.execute(
            stmt.on_conflict_do_update(
                index_elements=["person_id"],
                set_={
                    "fingerprint": stmt.excluded.fingerprint,
                    "model": stmt.excluded.model,
                    "trained_at": stmt.excluded.trained_at,
                },
            )
        )


async def mark_considered(
    *, session: AsyncSession, person_ids: Collection[int], at: datetime
) -> None:
    """The training job considered these people at `at` (before it read their marks):
    whoever it could not train (cold signals, marks that fold away, marked papers gone)
    gets an empty row, so `people_to_train` names them again only after a new reaction
    instead of on every run; a stored model keeps its bytes and fingerprint."""
    rows = [
        {"person_id": pid, "fingerprint": "", "model": b"", "trained_at": at}
        for pid in sorted(person_ids)
    ]
    for i in range(0, len(rows), WRITE_CHUNK):
        stmt = dialect_insert(session, TasteModel).values(rows[i : i + WRITE_CHUNK])
        await session.execute(
            stmt.on_conflict_do_update(
                index_elements=["person_id"], set_={"trained_at": stmt.excluded.trained_at}
            )
        )


async def forget_models(*, session: AsyncSession, person_ids: Collection[int]) -> None:
    """Drop the stored models of these people (their marks were erased)."""
    if person_ids:
        await session.execute(
            delete(TasteModel).where(col(TasteModel.person_id).in_(list(person_ids)))
        )


async def marks_by_person(
    *, session: AsyncSession, person_ids: Collection[int]
) -> dict[int, Marks]:
    """Each person's marks across every target they own, in two queries."""
    if not person_ids:
        return {}
    rows = await session.execute(
        select(col(Target.id), col(Target.person_id)).where(
            col(Target.person_id).in_(list(person_ids))
        )
    )
    owner = {int(t or 0): int(p or 0) for t, p in rows}
    by_person: dict[int, list[ReactionRecord]] = defaultdict(list)
    for r in await reactions_of(session=session, target_ids=list(owner)):
        by_person[owner[r.target_id]].append(r)
    return {pid: fold_marks(records) for pid, records in by_person.items()}


async def their_papers(
    *, session: AsyncSession, target_ids: Collection[int], start: datetime, end: datetime
) -> frozenset[str]:
    """Papers published in [start, end) in the targets' topics or caught by their alerts."""
    ids = list(target_ids)
    in_window = (col(Paper.published) >= start, col(Paper.published) < end)
    followed = await session.scalars(
        select(col(PaperTopic.paper_id))
        .join(Subscription, col(Subscription.topic_id) == col(PaperTopic.topic_id))
        .join(Paper, col(Paper.id) == col(PaperTopic.paper_id))
        .where(col(Subscription.target_id).in_(ids), *in_window)
    )
    caught = await session.scalars(
        select(col(AlertMatch.paper_id))
        .join(Alert, col(Alert.id) == col(AlertMatch.alert_id))
        .join(Paper, col(Paper.id) == col(AlertMatch.paper_id))
        .where(col(Alert.target_id).in_(ids), *in_window)
    )
    return frozenset(followed) | frozenset(caught)


@dataclass(frozen=True, slots=True)
class Suggestion:
    paper_id: str
    title: str
    url: str
    reason: str  # plain text; each medium escapes it


@dataclass(frozen=True, slots=True)
class Suggestions:
    """`/papers suggest`'s answer; `cold`: too few marks to learn from yet."""

    cold: bool
    papers: tuple[Suggestion, ...] = ()


async def suggest(
    *, session: AsyncSession, target_ids: Sequence[int], now: datetime, limit: int = SUGGESTIONS
) -> Suggestions:
    """The best papers of the last seven days for the owner of `target_ids` that they
    were not sent: outside their topics and alerts, unmarked, not in their outbox."""
    marks = fold_marks(await reactions_of(session=session, target_ids=target_ids))
    start = now - WEEK
    theirs = await their_papers(session=session, target_ids=target_ids, start=start, end=now)
    signals = Signals(marks.more, marks.less, theirs)
    if signals.cold:
        return Suggestions(cold=True)
    week = await session.scalars(
        select(col(Paper.id))
        .where(col(Paper.published) >= start, col(Paper.published) < now)
        .order_by(col(Paper.published).desc(), col(Paper.id))
        .limit(MAX_CORPUS)
    )
    corpus = await load_corpus(session=session, paper_ids=list(week))
    await add_marked(session=session, corpus=corpus, marks=[marks])
    ranking = rank(corpus, signals, picks=limit * 3, seed=min(target_ids))
    if ranking is None:
        return Suggestions(cold=True)
    keys = {
        message_key(t, MessageKind.PAPER, p.paper_id): p.paper_id
        for t in target_ids
        for p in ranking.picks
    }
    sent = set(
        await session.scalars(select(col(OutboxRow.key)).where(col(OutboxRow.key).in_(list(keys))))
    )
    unsent = {keys[k] for k in keys} - {keys[k] for k in sent}
    picks = [p for p in ranking.picks if p.paper_id in unsent][:limit]
    rows = {
        p.id: p
        for p in await session.scalars(
            select(Paper).where(col(Paper.id).in_([p.paper_id for p in picks]))
        )
    }
    return Suggestions(
        cold=False,
        papers=tuple(
            Suggestion(
                p.paper_id,
                rows[p.paper_id].title,
                paper_url(p.paper_id, rows[p.paper_id].links or {}),
                p.reason.text(),
            )
            for p in picks
            if p.paper_id in rows
        ),
    )
