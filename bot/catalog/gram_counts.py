"""Counting 1-3-gram phrases over many papers at once, as integer arrays. Pure, no I/O.

Why (issue 16's cost goal, < 10 s for 12 weeks of 60,000 papers): counting with Python
tuples built every n-gram of every paper (~400 tuples a paper, ~24 million over 60,000
papers) and intersected or counted them one by one; that was two thirds of a 27 CPU s
pass. Here a paper's words become word ids once, and the n-grams are arithmetic on
numpy arrays (an n-gram is one int64 code), so the per-n-gram work runs in C.

- Papers are laid end to end in one id array with a 0 after the title and after the
  abstract: 0 is the break (the empty string, never a word), and an n-gram holding a 0
  crosses a segment or a paper and is no n-gram at all. So the n-grams are exactly
  those of `phrases.paper_grams`, segment by segment.
- A phrase counts once per paper: (n-gram, paper) pairs are made unique before counting.
- Words become ids in batches of `_BATCH` papers, so only one batch's word strings are
  alive at a time (all 12 weeks' words at once would be ~600 MB of str objects).
- History (the weeks before the tested one) is read only for the candidate phrases:
  every word that is no candidate's word is 0 too, so an n-gram is looked up only when
  all its words are candidate words, among the sorted candidate codes (searchsorted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, count, repeat

import numpy as np
import numpy.typing as npt

from bot.catalog.phrases import Phrase, Segments
from bot.matching.textnorm import fold, split_words

IntArray = npt.NDArray[np.int64]

_BREAK = ""  # split() never yields an empty word
_BATCH = 2000
# Three word ids must fit one int64 code: (K^3 < 2^63) for K ids.
MAX_CODE_WORDS = 2**21 - 1


def _encode(
    papers: Iterable[Segments], to_ids: Callable[[list[str]], Iterator[int]]
) -> tuple[IntArray, IntArray]:
    """All papers' words as one id array (0 = break) and each position's paper index."""
    parts: list[IntArray] = []
    lengths: list[int] = []
    batch: list[str] = []
    for title, abstract in papers:
        batch += title
        batch.append(_BREAK)
        batch += abstract
        batch.append(_BREAK)
        lengths.append(len(title) + len(abstract) + 2)
        if len(lengths) % _BATCH == 0:
            parts.append(np.fromiter(to_ids(batch), np.int64, len(batch)))
            batch = []
    parts.append(np.fromiter(to_ids(batch), np.int64, len(batch)))
    ids = np.concatenate(parts)
    paper = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    return ids, paper


def _windows(ids: IntArray, n: int) -> list[IntArray]:
    """The n aligned columns of every n-word window (window i starts at position i)."""
    size = len(ids) - n + 1
    return [ids[k : k + size] for k in range(n)] if size > 0 else [ids[:0]] * n


def _distinct(values: IntArray) -> IntArray:
    """The distinct values, sorted. np.unique's hash table (numpy 2) measured ~5x slower
    than one sort for these millions of (n-gram, paper) keys."""
    values = np.sort(values)
    if len(values) < 2:
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def _unique_per_paper(codes: IntArray, paper: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct codes and in how many papers each occurs."""
    uniq, dense = np.unique(codes, return_inverse=True)
    papers = int(paper.max()) + 1 if len(paper) else 1
    pairs = _distinct(dense.reshape(-1).astype(np.int64) * papers + paper)
    return uniq, np.bincount(pairs // papers, minlength=len(uniq))


def week_counts(papers: Sequence[Segments], *, min_count: int) -> tuple[dict[Phrase, int], int]:
    """Papers per phrase for the phrases in at least `min_count` of `papers` (stop words
    and all: the caller filters), and how many distinct 1-3-grams they hold (BH's m)."""
    index: dict[str, int] = {_BREAK: 0}
    fresh = count(1)
    ids, paper = _encode(papers, lambda words: map(index.setdefault, words, fresh))
    word_of = {i: w for w, i in index.items()}
    base = int(ids.max()) + 1 if len(ids) else 1
    found: dict[Phrase, int] = {}
    family = 0
    # 1-grams
    keep = ids != 0
    uniq1, n1 = _unique_per_paper(ids[keep], paper[keep])
    family += len(uniq1)
    for code, n in zip(uniq1[n1 >= min_count].tolist(), n1[n1 >= min_count].tolist(), strict=True):
        found[(word_of[code],)] = n
    # 2-grams: a * base + b
    a, b = _windows(ids, 2)
    keep = (a != 0) & (b != 0)
    codes2 = a[keep] * base + b[keep]
    uniq2, n2 = _unique_per_paper(codes2, paper[: len(a)][keep])
    family += len(uniq2)
    for code, n in zip(uniq2[n2 >= min_count].tolist(), n2[n2 >= min_count].tolist(), strict=True):
        first, second = divmod(code, base)
        found[(word_of[first], word_of[second])] = n
    # 3-grams: (rank of the first two among the 2-grams) * base + c, which fits an int64
    # whatever the vocabulary (ranks and ids are both under the number of words).
    a, b, c = _windows(ids, 3)
    keep = (a != 0) & (b != 0) & (c != 0)
    ranks = np.searchsorted(uniq2, a[keep] * base + b[keep])
    uniq3, n3 = _unique_per_paper(ranks * base + c[keep], paper[: len(a)][keep])
    family += len(uniq3)
    for code, n in zip(uniq3[n3 >= min_count].tolist(), n3[n3 >= min_count].tolist(), strict=True):
        rank, third = divmod(code, base)
        first, second = divmod(int(uniq2[rank]), base)
        found[(word_of[first], word_of[second], word_of[third])] = n
    return found, family


def history_counts(
    papers: Sequence[tuple[str, str]], weeks_of: Sequence[int], candidates: set[Phrase], weeks: int
) -> dict[Phrase, list[int]]:
    """Papers per week (`weeks` of them) holding each candidate phrase; `papers` are
    (title, abstract) as given, each paper's week in `weeks_of`."""
    words = sorted(set(chain.from_iterable(candidates)))
    if len(words) >= MAX_CODE_WORDS:
        raise ValueError(f"{len(words)} candidate words; at most {MAX_CODE_WORDS - 1}")
    index = {w: i for i, w in enumerate(words, start=1)}
    base = len(words) + 1
    ids, paper = _history_ids(papers, index)
    week = np.asarray(weeks_of, dtype=np.int64)
    n_papers = max(len(papers), 1)
    ordered = sorted(candidates)
    codes = np.fromiter(
        (_code([index[w] for w in p], base) for p in ordered), np.int64, len(ordered)
    )
    order = np.argsort(codes)
    sorted_codes = codes[order]
    table = np.zeros((weeks, len(ordered)), dtype=np.int64)
    for n in (1, 2, 3):
        cols = _windows(ids, n)
        # Where the k-th word can be the k-th word of some candidate n-gram (a table per
        # position): most windows fail here, so few reach the searchsorted.
        fits = np.zeros((n, base), dtype=bool)
        for p in ordered:
            if len(p) == n:
                for k, w in enumerate(p):
                    fits[k, index[w]] = True
        keep = np.logical_and.reduce([fits[k][col] for k, col in enumerate(cols)])
        at = np.flatnonzero(keep)
        if n == 1:  # a word's code is its id, and every word kept is a candidate
            column = np.zeros(base, dtype=np.int64)
            for i, p in enumerate(ordered):
                if len(p) == 1:
                    column[index[p[0]]] = i
            which, where = column[ids[at]], at
        else:
            grams = np.zeros(len(at), dtype=np.int64)
            for col in cols:
                grams = grams * base + col[at]
            slot = np.searchsorted(sorted_codes, grams)
            slot[slot == len(sorted_codes)] = 0
            hit = sorted_codes[slot] == grams if len(sorted_codes) else slot < 0
            which, where = order[slot[hit]], at[hit]
        pairs = _distinct(which * n_papers + paper[where])
        which, whose = pairs // n_papers, pairs % n_papers
        table += np.bincount(
            week[whose] * len(ordered) + which, minlength=weeks * len(ordered)
        ).reshape(weeks, len(ordered))
    return dict(zip(ordered, table.T.tolist(), strict=True))


# Markers between texts: upper case never survives `fold`, so no word of a paper is one.
_SEGMENT, _PAPER = "SEGMENTEND", "PAPEREND"
# ASCII letters and digits stay, every other ASCII character separates words (textnorm's
# rule); non-ASCII pieces are already words and spaces (`_words_only`).
_ASCII_SEPARATORS = bytes(c if c < 128 and chr(c).isalnum() else 32 for c in range(256))
_STR_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})


def _history_ids(
    papers: Sequence[tuple[str, str]], index: dict[str, int]
) -> tuple[IntArray, IntArray]:
    """Word ids of every paper (0: a break, or no candidate's word) and each position's
    paper. The same words as `phrases.segments_of` (fold, then `split_words`), but a
    batch of papers is folded text by text and then split once, as bytes when ASCII (a
    bytes translate and split cost a fraction of str's): the 55,000 history papers'
    tokenising was most of what the arrays left (~9 of ~15 CPU s split per text)."""
    by_bytes = {w.encode(): i for w, i in index.items() if w.isascii()}
    by_bytes[_SEGMENT.encode()] = 0
    by_bytes[_PAPER.encode()] = -1
    by_str = {**index, _SEGMENT: 0, _PAPER: -1}
    parts: list[IntArray] = []
    for start in range(0, len(papers), _BATCH):
        pieces: list[str] = []
        for title, abstract in papers[start : start + _BATCH]:
            pieces += (_words_only(fold(title)), _SEGMENT, _words_only(fold(abstract)), _PAPER)
        joined = " ".join(pieces)
        if joined.isascii():
            raw = joined.encode().translate(_ASCII_SEPARATORS).split()
            parts.append(np.fromiter(map(by_bytes.get, raw, repeat(0)), np.int64, len(raw)))
        else:
            text = joined.translate(_STR_SEPARATORS).split()
            parts.append(np.fromiter(map(by_str.get, text, repeat(0)), np.int64, len(text)))
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
    ends = np.flatnonzero(ids == -1)  # each paper's marker is its last position
    paper = np.repeat(np.arange(len(ends), dtype=np.int64), np.diff(ends, prepend=-1))
    ids[ends] = 0
    return ids, paper


def _words_only(folded: str) -> str:
    """ASCII text as is (the batch's translate splits it); other text as its words
    joined by spaces, found by the matcher's own rule."""
    return folded if folded.isascii() else " ".join(split_words(folded))


def _code(word_ids: list[int], base: int) -> int:
    code = 0
    for i in word_ids:
        code = code * base + i
    return code
