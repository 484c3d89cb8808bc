"""tf-idf rows (bot/taste/features.py): papers appended together get exactly the rows
each would get appended alone (the batch computes weights, top terms and norms for all
at once), duplicates within one `add` counted once."""

from __future__ import annotations

import json

import numpy as np

from bot.data import make_sample
from bot.taste.features import MAX_TERMS, Corpus, Vocabulary


def _texts() -> list[tuple[str, str]]:
    raw = json.loads(make_sample.OUT.read_text(encoding="utf-8"))
    found = {r["id"]: f"{r['title']}\n{r['abstract']}" for r in raw}
    return sorted(found.items())


def test_papers_added_together_get_the_rows_they_get_one_by_one() -> None:
    papers = _texts()
    week, earlier = papers[:300], papers[300:700]
    # A long paper: more words than MAX_TERMS, so the top-term cut (ties included) counts.
    long = ("long", " ".join(text for _p, text in papers[:5]))
    together = Corpus(week, Vocabulary())
    together.add([*earlier, long, earlier[0], long])  # repeats: counted once
    alone = Corpus(week[:1], Vocabulary())
    alone = Corpus(week, alone.vocabulary)  # the same vocabulary, built another way
    for paper in [*earlier, long]:
        alone.add([paper])
    assert together.ids == alone.ids
    assert len(together.ids) == len(week) + len(earlier) + 1
    assert np.array_equal(together.indptr, alone.indptr)
    assert np.array_equal(together.indices, alone.indices)
    assert np.array_equal(together.data, alone.data)  # bit for bit
    columns, weights = together.vector("long")
    assert len(columns) == MAX_TERMS
    assert (np.diff(columns) > 0).all()
    assert abs(float(weights @ weights) - 1.0) < 1e-12
