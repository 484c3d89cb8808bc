"""Paper text as tf-idf rows: the words retrieval uses (folded, stop words dropped,
stemmed by `bot.ask.terms`), sublinear term frequency, smoothed idf, L2-normalised.

The rows live in one CSR-shaped set of numpy arrays (`indptr`, `indices`, `data`), so
scoring every paper of a week against a person's weights is one gather and one
`np.add.reduceat`, well under a millisecond for thousands of papers. The vocabulary
is an exact dict, not a hash (no collisions, and reasons can name the words), shared
by the corpora of a process (`Vocabulary`) so a model trained on one week scores the
next; papers outside the corpus (marks from earlier weeks) extend it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

from bot.ask.terms import content_words, stem

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

MAX_TERMS = 48  # per paper, the highest tf-idf: the tail adds cost and little signal


def terms_of(text: str) -> list[tuple[str, str]]:
    """(stem, surface word) of every content word of `text`, in order."""
    return [(stem(w), w) for w in content_words(text)]


class Vocabulary:
    """Stems as columns, shared by the corpora of one process (each week's, each
    `/papers suggest`'s): a column means the same word in all of them, so a reader's
    model trained on one week's corpus scores the next (bot/taste/cache.py keeps them).

    Also remembers each paper's column counts (bounded, oldest forgotten first): the
    stemming is most of a corpus's cost, and marked papers come back every week (about
    1 KB a paper: 30,000 is a couple of arXiv weeks and their readers' marks).
    """

    def __init__(self, remember: int = 30_000) -> None:
        self.columns: dict[str, int] = {}
        self.surface: list[str] = []  # column -> the word as a paper first spelled it
        self.stems: list[str] = []  # column -> its stem (a stored model names its words)
        self._counts: dict[tuple[str, int], tuple[IntArray, IntArray]] = {}
        self._remember = remember

    def column(self, term: str, word: str) -> int:
        """The column of stem `term` (a new one, spelled `word`, if it is new)."""
        found = self.columns.get(term)
        if found is None:
            found = self.columns[term] = len(self.surface)
            self.surface.append(word)
            self.stems.append(term)
        return found

    def counts(self, paper_id: str, text: str) -> tuple[IntArray, IntArray]:
        """(columns, how often) of the paper's words, columns ascending."""
        key = (paper_id, hash(text))
        found = self._counts.get(key)
        if found is None:
            counts = Counter(self.column(s, w) for s, w in terms_of(text))
            columns = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
            order = np.argsort(columns)
            n = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
            found = (columns[order], n[order])
            if self._remember > 0:
                if len(self._counts) >= self._remember:
                    del self._counts[next(iter(self._counts))]
                self._counts[key] = found
        return found

    def forget(self, paper_ids: Iterable[str]) -> None:
        """Drop the remembered counts of `paper_ids` (a paper's text changed, a bench)."""
        gone = set(paper_ids)
        for key in [k for k in self._counts if k[0] in gone]:
            del self._counts[key]


class Corpus:
    """The papers a ranking may order, as tf-idf rows over one vocabulary.

    `df` counts the corpus's own papers; a term the corpus never saw gets the largest
    idf, as if in one paper. `add` appends a paper (a mark from an earlier week) without
    changing the idf of the others, so the corpus's rows stay valid as it grows. Without
    a `vocabulary` the corpus has its own.
    """

    def __init__(
        self, papers: Iterable[tuple[str, str]], vocabulary: Vocabulary | None = None
    ) -> None:
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary(remember=0)
        counted = [(pid, self.vocabulary.counts(pid, text)) for pid, text in papers]
        self.n_docs = len(counted)
        width = len(self.vocabulary.surface)
        df = np.zeros(width, dtype=np.int64)
        if counted:
            df = np.bincount(np.concatenate([c for _p, (c, _n) in counted]), minlength=width)
        self._df = df
        self._idf = self._idf_of(df)
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self._indptr = [0]
        self._indices: list[IntArray] = []
        self._data: list[FloatArray] = []
        self._size = 0
        self._append(counted)
        self._freeze()

    @property
    def vocab(self) -> dict[str, int]:
        """Stem -> column (the vocabulary's: it may hold words of other corpora)."""
        return self.vocabulary.columns

    @property
    def surface(self) -> list[str]:
        return self.vocabulary.surface

    def _idf_of(self, df: IntArray) -> FloatArray:
        # A column this corpus never counted weighs as if in one paper.
        seen = np.where(df > 0, df, 1).astype(np.float64)
        return np.log((1 + self.n_docs) / (1 + seen)) + 1.0

    def idf(self, column: int) -> float:
        df = int(self._df[column]) if column < len(self._df) else 0
        return math.log((1 + self.n_docs) / (1 + (df or 1))) + 1.0

    def _append(self, counted: list[tuple[str, tuple[IntArray, IntArray]]]) -> None:
        """Append the rows of `counted` papers: (id, (columns, how often)) each. All
        papers' weights and top terms at once, each row as one paper alone would get."""
        if not counted:
            return
        lengths = np.fromiter((len(c) for _p, (c, _n) in counted), np.int64, len(counted))
        columns = np.concatenate([c for _p, (c, _n) in counted])
        if columns.size and int(columns.max()) >= len(self._idf):
            self._idf = np.concatenate(
                [self._idf, np.full(len(self.surface) - len(self._idf), self.idf(len(self._df)))]
            )
        n = np.concatenate([n for _p, (_c, n) in counted])
        weights = (1.0 + np.log(n)) * self._idf[columns]
        # Per paper, the MAX_TERMS highest weights, the lower column first among equals;
        # kept in place, so columns still ascend within a row.
        owner = np.repeat(np.arange(len(counted)), lengths)
        order = np.lexsort((columns, -weights, owner))
        rank = np.empty(len(order), dtype=np.int64)
        rank[order] = np.arange(len(order)) - (np.cumsum(lengths) - lengths)[owner[order]]
        keep = rank < MAX_TERMS
        kept, kept_columns = weights[keep], columns[keep]
        sizes = np.bincount(owner[keep], minlength=len(counted))
        ends = np.cumsum(sizes)
        # Each norm as a row alone computes it (one dot each: the same rounding).
        norms = np.ones(len(counted))
        for i, (lo, hi) in enumerate(zip((ends - sizes).tolist(), ends.tolist(), strict=True)):
            part = kept[lo:hi]
            norms[i] = math.sqrt(float(part @ part)) or 1.0
        for pid, _c in counted:
            self.row[pid] = len(self.ids)
            self.ids.append(pid)
        self._indices.append(kept_columns)
        self._data.append(kept / np.repeat(norms, sizes))
        self._indptr += (ends + self._size).tolist()
        self._size += int(ends[-1])

    def _freeze(self) -> None:
        self.indptr: IntArray = np.asarray(self._indptr, dtype=np.int64)
        self.indices: IntArray = (
            np.concatenate(self._indices) if self._indices else np.zeros(0, dtype=np.int64)
        )
        self.data: FloatArray = (
            np.concatenate(self._data) if self._data else np.zeros(0, dtype=np.float64)
        )
        self._indices = [self.indices]
        self._data = [self.data]
        # What `scores` needs of the corpus's own rows, sliced once, not per person.
        end = int(self.indptr[self.n_docs])
        self._own_indices = self.indices[:end]
        self._own_data = self.data[:end]
        nonempty = np.diff(self.indptr[: self.n_docs + 1]) > 0
        self._own_rows = np.flatnonzero(nonempty)
        self._own_starts = self.indptr[: self.n_docs][nonempty]

    def add(self, papers: Iterable[tuple[str, str]]) -> None:
        """Append papers not in the corpus yet (their idf is the corpus's)."""
        counted = []
        new: set[str] = set()
        for pid, text in papers:
            if pid not in self.row and pid not in new:
                new.add(pid)
                counted.append((pid, self.vocabulary.counts(pid, text)))
        if counted:
            self._append(counted)
            self._freeze()

    def vector(self, pid: str) -> tuple[IntArray, FloatArray]:
        """The paper's (columns, weights), sorted by column."""
        r = self.row[pid]
        lo, hi = self.indptr[r], self.indptr[r + 1]
        return self.indices[lo:hi], self.data[lo:hi]

    def scores(self, weights: FloatArray, bias: float = 0.0) -> FloatArray:
        """weights · row + bias for the corpus's own papers (`n_docs`, not those `add`ed
        later: those are marks, never ranked); columns past `weights` count zero."""
        if len(weights) < len(self.vocab):
            weights = np.concatenate([weights, np.zeros(len(self.vocab) - len(weights))])
        out = np.full(self.n_docs, bias, dtype=np.float64)
        if self._own_indices.size:
            products = weights[self._own_indices] * self._own_data
            out[self._own_rows] += np.add.reduceat(products, self._own_starts)
        return out

    def gather(self, pids: list[str]) -> tuple[IntArray, IntArray, FloatArray]:
        """The rows of `pids` at once: (which of `pids`, column, weight) per entry."""
        rows = np.fromiter((self.row[p] for p in pids), dtype=np.int64, count=len(pids))
        starts = self.indptr[rows]
        lengths = self.indptr[rows + 1] - starts
        owner = np.repeat(np.arange(len(pids)), lengths)
        # Entry k of row i sits at starts[i] + k: one arange shifted per row.
        offsets = np.cumsum(lengths) - lengths
        at = np.arange(int(lengths.sum())) + np.repeat(starts - offsets, lengths)
        return owner, self.indices[at], self.data[at]
