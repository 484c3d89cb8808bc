"""Batched rankings (bot/taste/batch.py) against the per-reader path, on the bundled
sample's papers: the same scores (to float32 rounding), the same order, the same picks
and reasons; and a digest run retrains only the readers whose signals changed."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest

from bot.data import make_sample
from bot.subscriptions.taste import Marks
from bot.taste import batch
from bot.taste.batch import Week, rank_many
from bot.taste.cache import Models
from bot.taste.features import Corpus, Vocabulary
from bot.taste.model import Model, pack, unpack
from bot.taste.plan import Ranking, Signals, learn, rank_with
from digests.build import RecipientData
from digests.sample import sample_recipient, sample_week
from digests.taste import taste_of, tastes_of

THEMES = ("agents", "video", "diffusion", "charts", "credit", "distillation", "transformers")


def _papers() -> list[tuple[str, str, str]]:
    """(id, title, title + abstract) of the bundled sample, by id."""
    raw = json.loads(make_sample.OUT.read_text(encoding="utf-8"))
    found = {r["id"]: (r["title"], f"{r['title']}\n{r['abstract']}") for r in raw}
    return [(pid, title, text) for pid, (title, text) in sorted(found.items())]


def _readers(n: int) -> tuple[Corpus, list[tuple[Model, Signals]]]:
    """A week of 500 papers; readers who marked papers about one or two title words
    (some of them outside the week), dislike a few others, follow some of the week."""
    papers = _papers()
    rng = random.Random(16)
    rng.shuffle(papers)
    week, earlier = papers[:500], papers[500:]
    corpus = Corpus([(pid, text) for pid, _t, text in week], Vocabulary())
    corpus.add((pid, text) for pid, _t, text in earlier)
    readers = []
    for i in range(n):
        words = rng.sample(THEMES, rng.randint(1, 2))
        about = [pid for pid, title, _x in papers if any(w in title.lower() for w in words)]
        other = [pid for pid, title, _x in papers if not any(w in title.lower() for w in words)]
        signals = Signals(
            more=tuple(rng.sample(about, rng.randint(2, 12))),
            less=tuple(rng.sample(other, rng.randint(0, 4))),
            theirs=frozenset(rng.sample([p for p, _t, _x in week], 40)),
            seen=frozenset(rng.sample([p for p, _t, _x in week], 3)),
        )
        model = learn(corpus, signals, seed=i)
        assert model is not None
        readers.append((model, signals))
    return corpus, readers


def _same(got: Ranking, alone: Ranking) -> None:
    batched, single = got.scores.array, alone.scores.array
    assert batched.dtype == np.float32  # the product runs in float32
    assert np.allclose(batched, single, rtol=0, atol=1e-5)
    # The batched order is the per-reader order: any two papers it puts one way round
    # are that way round per reader too, or within float32 rounding of each other.
    order = np.argsort(-batched, kind="stable")
    steps = single[order][:-1] - single[order][1:]
    assert (steps >= -1e-5).all()
    assert [(p.paper_id, p.reason) for p in got.picks] == [
        (p.paper_id, p.reason) for p in alone.picks
    ]
    assert np.allclose([p.score for p in got.picks], [p.score for p in alone.picks], atol=1e-5)


def test_batched_rankings_equal_the_per_reader_path(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus, readers = _readers(40)
    monkeypatch.setattr(batch, "CHUNK", 16)  # several chunks, the last one short
    week = Week(corpus)
    assert week.dense is not None
    rankings = rank_many(week, readers, picks=5)
    assert len(rankings) == len(readers)
    likes = words = 0
    for (model, signals), got in zip(readers, rankings, strict=True):
        alone = rank_with(corpus, model, signals, picks=5)
        _same(got, alone)
        assert got.picks  # every reader here has something to be offered
        assert not {p.paper_id for p in got.picks} & (signals.theirs | signals.seen)
        likes += sum(p.reason.like is not None for p in got.picks)
        words += sum(bool(p.reason.words) for p in got.picks)
    assert likes  # reasons that name a marked paper are compared, not only word lists
    assert words  # and word lists too


def test_a_corpus_too_wide_for_the_dense_rows_ranks_reader_by_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    corpus, readers = _readers(6)
    monkeypatch.setattr(batch, "DENSE_LIMIT", 10)
    week = Week(corpus)
    assert week.dense is None
    for (model, signals), got in zip(readers, rank_many(week, readers, picks=5), strict=True):
        alone = rank_with(corpus, model, signals, picks=5)
        assert np.array_equal(got.scores.array, alone.scores.array)
        assert got.picks == alone.picks


def _digest_readers() -> tuple[Corpus, list[tuple[RecipientData, Marks]]]:
    week = sample_week("2026-W39")
    corpus = Corpus([(p.id, p.title) for p in week.papers.values()], Vocabulary())
    data = sample_recipient(week)
    ids = sorted(week.papers)
    readers = [
        (replace(data, recipient=replace(data.recipient, id=i + 1)), Marks(tuple(ids[i : i + 4])))
        for i in range(6)
    ]
    return corpus, readers


def test_a_reader_whose_signals_did_not_change_is_not_retrained() -> None:
    week = sample_week("2026-W39")
    corpus, readers = _digest_readers()
    models = Models(corpus.vocabulary)
    scored = Week(corpus)
    first = tastes_of(readers, week, scored, models=models)
    assert all(t is not None for t in first)
    assert models.trained == len(readers)
    # The next run, one reader marked one more paper: only they are trained again.
    data, marks = readers[2]
    readers[2] = (data, Marks(more=(sorted(week.papers)[-1], *marks.more)))
    again = tastes_of(readers, week, scored, models=models)
    assert models.trained == len(readers) + 1
    # The kept models rank exactly as before; a reader following one more topic is
    # retrained too (what their follows bring in is part of what the model learned).
    for i in (0, 1, 3, 4, 5):
        old, new = first[i], again[i]
        assert old is not None
        assert new is not None
        assert old.missed == new.missed
    data, marks = readers[0]
    readers[0] = (replace(data, follows=data.follows | {"a-new-topic"}), marks)
    tastes_of(readers, week, scored, models=models)
    assert models.trained == len(readers) + 2
    # One reader alone (taste_of) gets what the batch gave them.
    data, marks = readers[4]
    alone = taste_of(data, week, corpus, marks, models=models)
    assert alone is not None
    assert again[4] is not None
    assert alone.missed == again[4].missed
    assert models.trained == len(readers) + 2


def test_a_packed_model_ranks_the_same_over_another_vocabulary() -> None:
    corpus, readers = _readers(6)
    # Another process, whose vocabulary met other words first: every word has another
    # column (in the same relative order, so the rows' top terms tie-break alike); a
    # stored model names its words, not its columns.
    text = {pid: x for pid, _t, x in _papers()}
    vocabulary = Vocabulary()
    for word in ("zebra", "yak", "xylophone"):
        vocabulary.column(word, word)
    other = Corpus([(pid, text[pid]) for pid in corpus.ids[: corpus.n_docs]], vocabulary)
    other.add((pid, text[pid]) for pid in corpus.ids[corpus.n_docs :])
    assert other.vocab != corpus.vocab
    own = corpus.ids[: corpus.n_docs]
    for model, signals in readers:
        moved = unpack(pack(model, corpus.vocabulary), other.vocabulary)
        assert (np.diff(moved.columns) > 0).all()
        assert moved.bias == model.bias
        stems = corpus.vocabulary.stems
        assert {
            other.vocabulary.stems[c]: v
            for c, v in zip(moved.columns.tolist(), moved.values.tolist(), strict=True)
        } == {
            stems[c]: v for c, v in zip(model.columns.tolist(), model.values.tolist(), strict=True)
        }
        here = rank_with(corpus, model, signals, picks=5)
        there = rank_with(other, moved, signals, picks=5)
        assert [here.scores[p] for p in own] == [there.scores[p] for p in own]
        assert there.picks == here.picks
    # A process that has met none of the words: each gets a column, stem and spelling.
    model = readers[0][0]
    fresh = Vocabulary()
    moved = unpack(pack(model, corpus.vocabulary), fresh)
    assert len(fresh.stems) == len(model.columns)
    assert [fresh.stems[c] for c in moved.columns] == [
        corpus.vocabulary.stems[c] for c in model.columns
    ]
    assert [fresh.surface[c] for c in moved.columns] == [corpus.surface[c] for c in model.columns]
    assert moved.values.tolist() == model.values.tolist()
    empty = Model(np.zeros(0, np.int32), np.zeros(0, np.float32), 0.5)
    back = unpack(pack(empty, corpus.vocabulary), other.vocabulary)
    assert (back.bias, len(back.columns), len(back.values)) == (0.5, 0, 0)
