"""Many readers' rankings of one corpus at once: the corpus's own rows become one dense
matrix over the columns they use (once per corpus), the readers' sparse weights are
stacked a chunk at a time, and one matrix product scores every paper for every reader
of the chunk; picks are one masked `argpartition` per chunk. Same scores, picks and
reasons as `plan.rank_with` per reader (tests/taste/test_batch.py), at a fraction of
the per-reader numpy calls. A corpus too wide for the dense matrix falls back to that
per-reader path. Pure.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
import numpy.typing as npt

from bot.taste.features import Corpus, FloatArray, IntArray
from bot.taste.model import Model
from bot.taste.plan import (
    LIKE_AT,
    REASON_WORDS,
    Pick,
    Ranking,
    Reason,
    Scores,
    Signals,
    best_rows,
    rank_with,
)

CHUNK = 512  # readers per product: bounds the scores in flight to CHUNK × papers
DENSE_LIMIT = 16_000_000  # dense entries: 128 MB in float64 + 64 MB in float32; past it, per reader
LIKED = 50  # newest liked marks a reason compares a pick with (as plan.explain)


class Week:
    """A corpus prepared for batched scoring: its own rows, dense over the columns they
    use, in float32 for the product and float64 for reasons (`dense` is None when that
    would pass DENSE_LIMIT)."""

    def __init__(self, corpus: Corpus) -> None:
        self.corpus = corpus
        n = corpus.n_docs
        end = int(corpus.indptr[n])
        own = corpus.indices[:end]
        used = np.unique(own)
        self.width = len(used)
        self._local = np.full(len(corpus.vocab) + 1, -1, dtype=np.int64)
        self._local[used] = np.arange(self.width)
        self._slot = np.where(self._local >= 0, self._local, self.width)
        self.dense: FloatArray | None = None
        self.single: npt.NDArray[np.float32] | None = None
        if n * self.width <= DENSE_LIMIT:
            self.dense = np.zeros((n, self.width), dtype=np.float64)
            lengths = np.diff(corpus.indptr[: n + 1])
            self.dense[np.repeat(np.arange(n), lengths), self._local[own]] = corpus.data[:end]
            self.single = self.dense.astype(np.float32)
        self._rows: dict[frozenset[str], IntArray] = {}

    def slot(self, columns: IntArray) -> IntArray:
        """`local`, with `width` (one past the used columns) where unused."""
        return self._slot[np.minimum(columns, len(self._slot) - 1)]

    def local(self, columns: IntArray) -> IntArray:
        """Each vocabulary column's place among the used ones, -1 where unused."""
        return self._local[np.minimum(columns, len(self._local) - 1)]

    def rows(self, papers: Collection[str]) -> IntArray:
        """The corpus's own rows among `papers` (remembered per frozenset: readers who
        follow the same topics share one)."""
        key = papers if isinstance(papers, frozenset) else None
        if key is not None:
            hit = self._rows.get(key)
            if hit is not None:
                return hit
        row, n = self.corpus.row, self.corpus.n_docs
        found = np.fromiter((r for r in (row.get(p, n) for p in papers) if r < n), dtype=np.int64)
        if key is not None:
            self._rows[key] = found
        return found


def rank_many(week: Week, readers: Sequence[tuple[Model, Signals]], *, picks: int) -> list[Ranking]:
    """Each reader's `plan.rank_with(corpus, model, signals, picks=picks)`, batched."""
    if week.dense is None or week.single is None or week.corpus.n_docs == 0:
        return [rank_with(week.corpus, m, s, picks=picks) for m, s in readers]
    marks = _Marks(week, [s for _m, s in readers]) if picks > 0 else None
    out: list[Ranking] = []
    for lo in range(0, len(readers), CHUNK):
        out += _chunk(week, week.single, week.dense, readers[lo : lo + CHUNK], picks, marks)
    return out


def _chunk(
    week: Week,
    single: npt.NDArray[np.float32],
    dense: FloatArray,
    readers: Sequence[tuple[Model, Signals]],
    limit: int,
    marks: _Marks | None,
) -> list[Ranking]:
    corpus = week.corpus
    width = week.width
    # One column more than the week uses: every word the week lacks lands there, so the
    # weights go in with one flat scatter and no mask; the product leaves it out.
    weights = np.zeros((len(readers), width + 1), dtype=np.float32)
    lengths = [len(m.columns) for m, _s in readers]
    if sum(lengths):
        starts = np.repeat(np.arange(len(readers), dtype=np.int64) * (width + 1), lengths)
        flat = starts + week.slot(np.concatenate([m.columns for m, _s in readers]))
        weights.ravel()[flat] = np.concatenate([m.values for m, _s in readers])
    bias = np.array([m.bias for m, _s in readers], dtype=np.float32)
    scores = weights[:, :width] @ single.T
    scores += bias[:, None]
    if limit <= 0 or marks is None:
        return [Ranking(Scores(corpus, scores[i]), ()) for i in range(len(readers))]
    masked = scores.copy()
    hidden: list[IntArray] = []
    whose: list[int] = []
    for i, (_m, s) in enumerate(readers):
        for group in (s.theirs, s.seen, s.more + s.less):
            if group:
                hidden.append(week.rows(group))
                whose.append(i)
    if hidden:
        owner = np.repeat(np.array(whose, dtype=np.int64), [len(h) for h in hidden])
        masked[owner, np.concatenate(hidden)] = -np.inf
    chosen = best_rows(corpus, scores, masked, limit)
    rows = [[r for _v, r in best] for best in chosen]
    reasons = marks.reasons(dense, weights, rows, [s for _m, s in readers])
    ids = corpus.ids
    return [
        Ranking(
            Scores(corpus, scores[i]),
            tuple(Pick(ids[r], v, why) for (v, r), why in zip(best, why_i, strict=True)),
        )
        for i, (best, why_i) in enumerate(zip(chosen, reasons, strict=True))
    ]


class _Marks:
    """The liked marks of the readers over the week's used columns, each as its (at
    most MAX_TERMS) entries padded to one width: a pick only has those columns, so a
    mark's other words add nothing to a cosine, and a cosine is a sum over the mark's
    entries, not a product over every column of the week."""

    def __init__(self, week: Week, signals: Sequence[Signals]) -> None:
        self.corpus = week.corpus
        self.week = week
        row = self.corpus.row
        ids = sorted({p for s in signals for p in s.more[:LIKED] if p in row})
        self.ids = ids
        self.at = {p: i for i, p in enumerate(ids)}
        self.like = [Reason(like=p) for p in ids]  # one per mark, shared by every pick
        self.columns = np.zeros((len(ids), 1), dtype=np.int32)
        self.values = np.zeros((len(ids), 1), dtype=np.float64)
        if ids:
            owner, columns, values = self.corpus.gather(ids)
            starts = np.searchsorted(owner, np.arange(len(ids)))
            slot = np.arange(len(owner)) - starts[owner]
            width = int(slot.max()) + 1 if len(slot) else 1
            local = week.local(columns)
            inside = local >= 0  # a word the week's papers lack: zero in every pick
            self.columns = np.zeros((len(ids), width), dtype=np.int32)
            self.values = np.zeros((len(ids), width), dtype=np.float64)
            self.columns[owner[inside], slot[inside]] = local[inside]
            self.values[owner[inside], slot[inside]] = values[inside]

    def reasons(
        self,
        dense: FloatArray,
        weights: npt.NDArray[np.float32],
        rows: Sequence[Sequence[int]],
        signals: Sequence[Signals],
    ) -> list[list[Reason]]:
        """`plan.explain` of each reader's picks at corpus `rows[i]`, for a chunk at once:
        every (pick, liked mark) cosine in one gather, the best mark per pick by a
        segmented max (the first, newest, among equals)."""
        liked = [[self.at[p] for p in s.more[:LIKED] if p in self.at] for s in signals]
        n_liked = np.array([len(x) for x in liked], dtype=np.int64)
        n_picks = np.array([len(r) for r in rows], dtype=np.int64)
        pick_row = np.array([r for rs in rows for r in rs], dtype=np.int64)
        pick_owner = np.repeat(np.arange(len(rows)), n_picks)
        flat = np.array([m for x in liked for m in x], dtype=np.int64)
        first = np.cumsum(n_liked) - n_liked  # each reader's first liked in `flat`
        per_pick = n_liked[pick_owner]
        best = np.full(len(pick_row), -1, dtype=np.int64)  # the liked mark, -1: words
        if per_pick.sum():
            pair_pick = np.repeat(np.arange(len(pick_row)), per_pick)
            offsets = np.cumsum(per_pick) - per_pick
            mark = flat[
                np.arange(int(per_pick.sum())) + np.repeat(first[pick_owner] - offsets, per_pick)
            ]
            # Flat int32 positions in the week's rows (n × width <= DENSE_LIMIT < 2³¹):
            # one `take`, half the index memory of a 2-D fancy index.
            at_pick = (pick_row[pair_pick] * dense.shape[1]).astype(np.int32)
            flat_at = self.columns[mark]
            flat_at += at_pick[:, None]
            picks = dense.ravel().take(flat_at)
            cosines = np.einsum("pk,pk->p", picks, self.values[mark])
            has = np.flatnonzero(per_pick)
            starts = offsets[has]
            top = np.maximum.reduceat(cosines, starts)
            ends = np.repeat(top, per_pick[has])
            where = np.where(cosines == ends, np.arange(len(cosines)), len(cosines))
            at = np.minimum.reduceat(where, starts)
            alike = top >= LIKE_AT
            best[has[alike]] = mark[at[alike]]
        out: list[list[Reason]] = []
        marks = iter(best.tolist())
        like = self.like
        for i, picked in enumerate(rows):
            out.append(
                [like[m] if (m := next(marks)) >= 0 else self._words(weights[i], r) for r in picked]
            )
        return out

    def _words(self, weights: npt.NDArray[np.float32], row: int) -> Reason:
        """`plan.reason_words` from the reader's weights over the week's used columns
        (a pick's words are all among them): the same contributions, so the same words."""
        corpus = self.corpus
        lo, hi = int(corpus.indptr[row]), int(corpus.indptr[row + 1])
        columns = corpus.indices[lo:hi]
        contributions = weights[self.week.local(columns)].astype(np.float64) * corpus.data[lo:hi]
        order = np.argsort(-contributions, kind="stable")[:REASON_WORDS].tolist()
        surface = corpus.surface
        return Reason(words=tuple(surface[int(columns[j])] for j in order if contributions[j] > 0))
