"""One person's linear model over tf-idf rows: regularised least squares, in closed form.

Why this classifier (the arxiv-sanity-lite approach is a linear SVM over tf-idf of the
papers a user tagged; ours is its closest closed-form cousin):

- A person gives tens of examples, a paper has thousands of possible words. In that
  regime a linear model is as good as anything, and ridge regression on ±1 labels (a
  "regularised least-squares classifier", sklearn's `RidgeClassifier`) ranks about as
  well as a linear SVM or logistic regression (Rifkin & Klautau 2004).
- Solved in its dual form, training is one n×n linear system for n examples (n ≤ about
  a hundred: marks, a sample of their topics' papers, sampled negatives):
  `(K + λ C⁻¹) α = y`, `w = Xᵀ α`. No learning rate, no iterations, no convergence
  test, the same answer every time, and milliseconds (bench/ranking.py). A digest run
  still retrains only readers whose signals changed (bot/taste/cache.py).
- numpy only (one small, ubiquitous dependency); scikit-learn would add SciPy and
  joblib for one solve, and its per-call validation costs more than the solve itself.

Each example has a weight `c` (a mark counts fully, a paper of a followed topic less);
the intercept is a constant feature, regularised like the rest.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from bot.taste.features import Corpus, FloatArray, IntArray, Vocabulary

RIDGE = 1.0  # λ: with unit-length rows, 1.0 keeps weights small for a handful of marks
# Weights kept per model, the largest |w|: bounds a cached model's memory (a reader's
# examples touch a few thousand words at most, most of them with tiny weights).
MAX_WEIGHTS = 1024


@dataclass(frozen=True, slots=True)
class Example:
    """A paper the person said something about: label +1 (wants) or -1, and its weight."""

    paper_id: str
    label: float
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Model:
    """w · x + bias ranks a paper; w is sparse: `values` at vocabulary `columns`
    (ascending), every other word weighs zero."""

    columns: npt.NDArray[np.int32]
    values: npt.NDArray[np.float32]  # float32: half the memory of the models kept
    bias: float

    def dense(self, width: int) -> FloatArray:
        """w over the first `width` columns of the vocabulary."""
        out = np.zeros(width, dtype=np.float64)
        inside = self.columns < width
        out[self.columns[inside]] = self.values[inside]
        return out

    def weight_of(self, columns: IntArray) -> FloatArray:
        """w at each of `columns` (zero where the model has no weight)."""
        if not len(self.columns):
            return np.zeros(len(columns), dtype=np.float64)
        at = np.minimum(np.searchsorted(self.columns, columns), len(self.columns) - 1)
        found = self.values[at].astype(np.float64)
        return np.where(self.columns[at] == columns, found, 0.0)

    def scores(self, corpus: Corpus) -> FloatArray:
        """The score of every paper of the corpus, in `corpus.ids` order."""
        return corpus.scores(self.dense(len(corpus.vocab)), self.bias)


def train(corpus: Corpus, examples: Sequence[Example], *, ridge: float = RIDGE) -> Model:
    """Fit the weighted ridge classifier on `examples` (every paper must be in `corpus`)."""
    n = len(examples)
    rows, columns, values = corpus.gather([e.paper_id for e in examples])
    # The Gram matrix only needs the words two examples share: a word of one example
    # adds to its own diagonal entry (its squared length) alone. Dropping the rest
    # keeps the dense block to a few hundred columns instead of thousands. Counted
    # over the vocabulary (bincount, cumsum) rather than with np.unique: no sorts, and
    # the same columns in the same order.
    counts = np.bincount(columns, minlength=len(corpus.vocab))
    shared = counts[columns] >= 2
    kept = counts >= 2
    position = np.cumsum(kept) - 1
    dense = np.zeros((n, int(np.count_nonzero(kept))))
    dense[rows[shared], position[columns[shared]]] = values[shared]
    gram = dense @ dense.T
    np.fill_diagonal(gram, np.bincount(rows, weights=values * values, minlength=n))
    gram += 1.0  # the constant feature that carries the bias
    labels = np.array([e.label for e in examples], dtype=np.float64)
    costs = np.array([max(e.weight, 1e-6) for e in examples], dtype=np.float64)
    alpha = np.linalg.solve(gram + np.diag(ridge / costs), labels)
    weights = np.bincount(columns, weights=values * alpha[rows], minlength=len(corpus.vocab))
    used = np.flatnonzero(weights)
    if len(used) > MAX_WEIGHTS:
        strongest = np.argpartition(-np.abs(weights[used]), MAX_WEIGHTS - 1)[:MAX_WEIGHTS]
        used = np.sort(used[strongest])
    return Model(used.astype(np.int32), weights[used].astype(np.float32), float(alpha.sum()))


_HEAD = struct.Struct("<dII")  # bias, bytes of the stems, bytes of their spellings


def pack(model: Model, vocabulary: Vocabulary) -> bytes:
    """The model in words, not columns (a column means a word of one process's
    vocabulary only): bias, each weight's stem, then their spellings (needed only for
    a word the reading process has not met), the weights in float32."""
    columns = model.columns.tolist()
    stems = "\n".join([vocabulary.stems[c] for c in columns]).encode()
    spelled = "\n".join([vocabulary.surface[c] for c in columns]).encode()
    values = model.values.astype("<f4").tobytes()
    return _HEAD.pack(model.bias, len(stems), len(spelled)) + stems + spelled + values


def unpack(blob: bytes, vocabulary: Vocabulary) -> Model:
    """`pack`'s model over `vocabulary`'s columns (its new words get new columns): the
    same weight on the same word, so the same scores."""
    bias, n_stems, n_spelled = _HEAD.unpack_from(blob)
    at = _HEAD.size
    values = np.frombuffer(blob, dtype="<f4", offset=at + n_stems + n_spelled).astype(np.float32)
    if not len(values):
        return Model(np.zeros(0, dtype=np.int32), values, bias)
    stems = blob[at : at + n_stems].decode().split("\n")
    found = list(map(vocabulary.columns.get, stems))  # one dict lookup a word, in C
    if None in found:
        spelled = blob[at + n_stems : at + n_stems + n_spelled].decode().split("\n")
        found = [
            c if c is not None else vocabulary.column(stem, word)
            for c, stem, word in zip(found, stems, spelled, strict=True)
        ]
    columns = np.array(found, dtype=np.int32)
    order = np.argsort(columns, kind="stable")
    return Model(columns[order], values[order], bias)
