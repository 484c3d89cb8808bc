"""Paper text as tf-idf rows: the words retrieval uses (folded, stop words dropped,
stemmed by `bot.ask.terms`), sublinear term frequency, smoothed idf, L2-normalised.

The rows live in one CSR-shaped set of numpy arrays (`indptr`, `indices`, `data`), so
scoring every paper of a week against a person's weights is one gather and one
`np.add.reduceat`, well under a millisecond for thousands of papers. The vocabulary
is the corpus's own (an exact dict, not a hash: no collisions, and reasons can name
the words); papers outside the corpus (marks from earlier weeks) extend it.
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


class Corpus:
    """The papers a ranking may order, as tf-idf rows over one vocabulary.

    `df` counts the corpus's own papers; a term the corpus never saw gets the largest
    idf, as if in one paper. `add` appends a paper (a mark from an earlier week) without
    changing the idf of the others, so the corpus's rows stay valid as it grows.
    """

    def __init__(self, papers: Iterable[tuple[str, str]]) -> None:
        texts = [(pid, terms_of(text)) for pid, text in papers]
        self.vocab: dict[str, int] = {}
        self.surface: list[str] = []  # column -> the word as a paper first spelled it
        df: Counter[int] = Counter()
        counted = []
        for _pid, terms in texts:
            counts = Counter(self._column(s, w) for s, w in terms)
            df.update(counts.keys())
            counted.append(counts)
        self.n_docs = len(texts)
        self._df = df
        self.ids: list[str] = []
        self.row: dict[str, int] = {}
        self._indptr = [0]
        self._indices: list[int] = []
        self._data: list[float] = []
        for (pid, _terms), counts in zip(texts, counted, strict=True):
            self._append(pid, counts)
        self._freeze()

    def _column(self, term: str, word: str) -> int:
        found = self.vocab.get(term)
        if found is None:
            found = self.vocab[term] = len(self.surface)
            self.surface.append(word)
        return found

    def idf(self, column: int) -> float:
        return math.log((1 + self.n_docs) / (1 + self._df.get(column, 1))) + 1.0

    def _append(self, pid: str, counts: Counter[int]) -> None:
        weights = {c: (1.0 + math.log(n)) * self.idf(c) for c, n in counts.items()}
        top = sorted(weights.items(), key=lambda cw: (-cw[1], cw[0]))[:MAX_TERMS]
        norm = math.sqrt(sum(w * w for _c, w in top)) or 1.0
        top.sort()
        self.row[pid] = len(self.ids)
        self.ids.append(pid)
        self._indices.extend(c for c, _w in top)
        self._data.extend(w / norm for _c, w in top)
        self._indptr.append(len(self._indices))

    def _freeze(self) -> None:
        self.indptr: IntArray = np.asarray(self._indptr, dtype=np.int64)
        self.indices: IntArray = np.asarray(self._indices, dtype=np.int64)
        self.data: FloatArray = np.asarray(self._data, dtype=np.float64)
        # What `scores` needs of the corpus's own rows, sliced once, not per person.
        end = int(self.indptr[self.n_docs])
        self._own_indices = self.indices[:end]
        self._own_data = self.data[:end]
        nonempty = np.diff(self.indptr[: self.n_docs + 1]) > 0
        self._own_rows = np.flatnonzero(nonempty)
        self._own_starts = self.indptr[: self.n_docs][nonempty]

    def add(self, papers: Iterable[tuple[str, str]]) -> None:
        """Append papers not in the corpus yet (their idf is the corpus's)."""
        added = False
        for pid, text in papers:
            if pid not in self.row:
                self._append(pid, Counter(self._column(s, w) for s, w in terms_of(text)))
                added = True
        if added:
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
