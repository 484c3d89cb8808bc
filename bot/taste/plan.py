"""From one person's signals to an order and "you may have missed" picks. Pure.

Signals, strongest first: papers marked "more" (+1) and "less" (-1), then papers of the
topics they follow and caught by their alerts (+1, weaker), then a seeded sample of the
corpus's other papers (-1, weaker: most papers are not for any one reader). Too few
marks is a cold start: `rank` returns None and callers keep today's order exactly.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bot.taste.features import Corpus, FloatArray
from bot.taste.model import Example, Model, train

MIN_MARKS = 2  # fewer marks than this is a cold start
MAX_MARKS = 200  # the newest marks count; taste drifts
THEIRS_WEIGHT = 0.3  # a followed topic's paper is a hint, a mark is a statement
MAX_THEIRS = 20
NEGATIVE_WEIGHT = 0.5
NEGATIVES = (10, 40)  # at least, at most; twice the positives in between
LIKE_AT = 0.12  # cosine from which a pick is "like" a marked paper
REASON_WORDS = 3


@dataclass(frozen=True, slots=True)
class Signals:
    """What one person told us, as paper ids (marks newest first)."""

    more: tuple[str, ...] = ()
    less: tuple[str, ...] = ()
    theirs: frozenset[str] = frozenset()  # papers of their follows and alerts
    seen: frozenset[str] = frozenset()  # papers already sent to them otherwise

    @property
    def cold(self) -> bool:
        marks = len(self.more) + len(self.less)
        return marks < MIN_MARKS or not (self.more or self.theirs)


@dataclass(frozen=True, slots=True)
class Reason:
    """Why a paper was picked: a marked paper it resembles, else the words it shares."""

    like: str | None = None
    words: tuple[str, ...] = ()

    def text(self) -> str:
        """Plain text; each medium escapes it."""
        if self.like is not None:
            return f"like {self.like} that you marked"
        if self.words:
            return "about " + ", ".join(f"“{w}”" for w in self.words) + ", like papers you marked"
        return "close to papers you marked"


@dataclass(frozen=True, slots=True)
class Pick:
    paper_id: str
    score: float
    reason: Reason


class Scores(Mapping[str, float]):
    """A person's score of every paper in the corpus, without building a dict per person."""

    def __init__(self, corpus: Corpus, values: npt.NDArray[np.floating[Any]]) -> None:
        self._row = corpus.row
        self._values = values

    @property
    def array(self) -> npt.NDArray[np.floating[Any]]:
        """The scores in corpus row order (the corpus's own papers)."""
        return self._values

    def __getitem__(self, paper_id: str) -> float:
        row = self._row[paper_id]
        if row >= len(self._values):
            raise KeyError(paper_id)  # a mark from an earlier week: never ranked
        return float(self._values[row])

    def __iter__(self) -> Iterator[str]:
        return (p for p, r in self._row.items() if r < len(self._values))

    def __len__(self) -> int:
        return len(self._values)


@dataclass(frozen=True, slots=True)
class Ranking:
    scores: Scores
    picks: tuple[Pick, ...]


def examples(corpus: Corpus, signals: Signals, *, seed: int) -> list[Example]:
    """The training set: marks, a sample of their topics' papers, a sample of the rest."""
    more = [p for p in signals.more[:MAX_MARKS] if p in corpus.row]
    less = [p for p in signals.less[:MAX_MARKS] if p in corpus.row]
    marked = set(more) | set(less)
    rng = random.Random(seed)
    theirs = sorted(p for p in signals.theirs if p in corpus.row and p not in marked)
    if len(theirs) > MAX_THEIRS:
        theirs = rng.sample(theirs, MAX_THEIRS)
    found = [Example(p, 1.0) for p in more] + [Example(p, -1.0) for p in less]
    found += [Example(p, 1.0, THEIRS_WEIGHT) for p in theirs]
    low, high = NEGATIVES
    wanted = min(high, max(low, 2 * (len(more) + len(theirs))))
    taken = marked | set(theirs) | signals.theirs
    negatives: list[str] = []
    for row in rng.sample(range(corpus.n_docs), min(corpus.n_docs, wanted * 2)):
        pid = corpus.ids[row]
        if pid not in taken:
            negatives.append(pid)
            if len(negatives) == wanted:
                break
    found += [Example(p, -1.0, NEGATIVE_WEIGHT) for p in negatives]
    return found


def learn(corpus: Corpus, signals: Signals, *, seed: int) -> Model | None:
    """The person's model; None when cold or when none of their marks is left."""
    if signals.cold:
        return None
    found = examples(corpus, signals, seed=seed)
    if not any(e.label > 0 for e in found):
        return None  # the marked papers are gone from the store: nothing to learn from
    return train(corpus, found)


def rank(corpus: Corpus, signals: Signals, *, picks: int, seed: int) -> Ranking | None:
    """The person's scores and up to `picks` papers from outside their own; None when cold."""
    model = learn(corpus, signals, seed=seed)
    return None if model is None else rank_with(corpus, model, signals, picks=picks)


def rank_with(corpus: Corpus, model: Model, signals: Signals, *, picks: int) -> Ranking:
    """`rank` with a model already trained (bot/taste/batch.py does many at once)."""
    values = model.scores(corpus)
    return Ranking(Scores(corpus, values), pick(corpus, model, values, signals, picks))


def pick(
    corpus: Corpus, model: Model, values: FloatArray, signals: Signals, limit: int
) -> tuple[Pick, ...]:
    """The best-scored corpus papers that are not theirs, not seen and not marked, and
    better than the median paper."""
    if limit <= 0 or corpus.n_docs == 0:
        return ()
    masked = values.copy()
    for group in (signals.theirs, signals.seen, signals.more, signals.less):
        rows = [corpus.row[p] for p in group if corpus.row.get(p, corpus.n_docs) < corpus.n_docs]
        masked[rows] = -np.inf
    [best] = best_rows(corpus, values[None, :], masked[None, :], limit)
    ids = [corpus.ids[r] for _v, r in best]
    return tuple(
        Pick(pid, v, reason)
        for pid, (v, r), reason in zip(ids, best, explain(corpus, model, ids, signals), strict=True)
    )


def best_rows(
    corpus: Corpus,
    scores: npt.NDArray[np.floating[Any]],
    masked: npt.NDArray[np.floating[Any]],
    limit: int,
) -> list[list[tuple[float, int]]]:
    """Per reader (a row of `scores`, and of `masked`: the same with what they may not be
    offered at -inf), up to `limit` (score, corpus row) of `masked`, best first (then by
    id), each above the median of the reader's `scores`. `masked` is overwritten.

    Ridge scores have no natural zero (the classes are unbalanced): a pick must at least
    beat the median paper of the corpus, so a reader with odd marks gets fewer. The
    median is only computed for readers whose weakest candidate might not beat it."""
    readers, n = masked.shape
    k = min(limit, n)
    at = np.arange(readers)
    rows = np.empty((readers, k), dtype=np.int64)
    values = np.empty((readers, k), dtype=np.float64)
    for t in range(k):  # k argmaxes beat an argpartition for a handful of picks
        best = masked.argmax(axis=1)
        rows[:, t] = best
        values[:, t] = masked[at, best]
        masked[at, best] = -np.inf
    weakest = np.where(np.isfinite(values), values, np.inf).min(axis=1)
    # More than half the papers strictly below the weakest candidate: both middle
    # papers are, so the median is too.
    below = np.count_nonzero(scores < weakest[:, None].astype(scores.dtype), axis=1)
    floors = np.full(readers, -np.inf)
    unsure = np.flatnonzero(below < n // 2 + 1)
    if len(unsure):
        floors[unsure] = np.median(scores[unsure], axis=1)
    out = []
    ids = corpus.ids
    for i in range(readers):
        floor = floors[i]
        found = [
            (v, r) for v, r in zip(values[i].tolist(), rows[i].tolist(), strict=True) if v > floor
        ]
        found.sort(key=lambda vr: (-vr[0], ids[vr[1]]))
        out.append(found)
    return out


def explain(corpus: Corpus, model: Model, paper_ids: list[str], signals: Signals) -> list[Reason]:
    """Per pick, the marked paper it is most like, or the words that weigh most for it.

    The cosines of all picks with all liked marks are one small product (only the
    columns the marks use count), not a gather of the marks per pick."""
    if not paper_ids:
        return []
    liked = [p for p in signals.more[:50] if p in corpus.row]
    cosines = np.zeros((len(paper_ids), len(liked)))
    if liked:
        rows, columns, values = corpus.gather(liked)
        local = np.full(len(corpus.vocab), -1, dtype=np.int64)
        used = np.unique(columns)
        local[used] = np.arange(len(used))
        marks = np.zeros((len(liked), len(used)))
        marks[rows, local[columns]] = values
        owner, cols, vals = corpus.gather(paper_ids)
        at = local[cols]
        inside = at >= 0
        picks = np.zeros((len(paper_ids), len(used)))
        picks[owner[inside], at[inside]] = vals[inside]
        cosines = picks @ marks.T
    out = []
    for i, paper_id in enumerate(paper_ids):
        if liked:
            best = int(np.argmax(cosines[i]))  # the first (newest) mark among equals
            if cosines[i, best] >= LIKE_AT:
                out.append(Reason(like=liked[best]))
                continue
        out.append(reason_words(corpus, model, paper_id))
    return out


def reason_words(corpus: Corpus, model: Model, paper_id: str) -> Reason:
    """The words of the paper that weigh most for the person."""
    columns, data = corpus.vector(paper_id)
    contributions = model.weight_of(columns) * data
    order = np.argsort(-contributions, kind="stable")[:REASON_WORDS]
    words = tuple(corpus.surface[int(columns[i])] for i in order if contributions[i] > 0)
    return Reason(words=words)
