"""The per-person model, pure: marks about X rank X above Y, cold starts stay cold,
picks come from outside what the reader already gets, and their reasons name a mark."""

from __future__ import annotations

import random

from bot.taste.features import Corpus
from bot.taste.model import Example, train
from bot.taste.plan import Reason, Signals, examples, explain, rank

PROTEIN = [
    "protein",
    "folding",
    "structure",
    "prediction",
    "amino",
    "acid",
    "residue",
    "molecular",
    "dynamics",
]
GALAXY = [
    "galaxy",
    "cluster",
    "dark",
    "matter",
    "cosmology",
    "redshift",
    "survey",
    "telescope",
    "halo",
]
AGENTS = ["language", "agent", "tool", "use", "planning", "reward", "policy", "web", "browsing"]
FILLER = [
    "we",
    "propose",
    "method",
    "results",
    "show",
    "approach",
    "performance",
    "novel",
    "experiments",
]


def _corpus(n: int = 90) -> Corpus:
    rng = random.Random(7)
    themes = {"x": PROTEIN, "y": GALAXY, "z": AGENTS}
    papers = []
    for i in range(n):
        name = "xyz"[i % 3]
        words = rng.choices(themes[name], k=10) + rng.choices(FILLER, k=12)
        papers.append((f"{name}{i:03d}", " ".join(words)))
    return Corpus(papers)


def test_a_reader_who_marks_x_papers_gets_x_ranked_above_y() -> None:
    corpus = _corpus()
    signals = Signals(more=("x000", "x003", "x006"), less=("y001",))
    ranking = rank(corpus, signals, picks=5, seed=1)
    assert ranking is not None
    scores = ranking.scores
    xs = [scores[p] for p in corpus.ids if p.startswith("x") and p not in signals.more]
    ys = [scores[p] for p in corpus.ids if p.startswith("y")]
    assert min(xs) > max(ys)
    # The picks are X papers, and none of them is a paper the reader already marked.
    assert [p.paper_id[0] for p in ranking.picks] == ["x"] * 5
    assert not {p.paper_id for p in ranking.picks} & set(signals.more)


def test_too_few_marks_is_a_cold_start() -> None:
    corpus = _corpus()
    assert rank(corpus, Signals(), picks=5, seed=1) is None
    assert rank(corpus, Signals(more=("x000",)), picks=5, seed=1) is None
    # Two "less" marks and nothing liked: nothing to rank towards.
    assert rank(corpus, Signals(less=("y001", "y004")), picks=5, seed=1) is None
    # Marks of papers the store no longer has teach nothing.
    assert rank(corpus, Signals(more=("gone1", "gone2")), picks=5, seed=1) is None
    assert rank(Corpus([]), Signals(more=("gone1", "gone2")), picks=5, seed=1) is None
    # Two "less" marks and followed topics: the follows are the positives.
    theirs = frozenset(p for p in corpus.ids if p.startswith("z"))
    assert rank(corpus, Signals(less=("y001", "y004"), theirs=theirs), picks=5, seed=1)


def test_picks_skip_their_own_and_seen_papers_and_name_a_marked_paper() -> None:
    corpus = _corpus()
    theirs = frozenset(p for p in corpus.ids if p.startswith("x") and int(p[1:]) < 45)
    seen = frozenset({"x045", "x048"})
    signals = Signals(more=("x000", "x003"), less=("y001",), theirs=theirs, seen=seen)
    ranking = rank(corpus, signals, picks=5, seed=3)
    assert ranking is not None
    picked = [p.paper_id for p in ranking.picks]
    assert picked
    assert not set(picked) & (theirs | seen)
    assert all(p.startswith("x") for p in picked)
    for p in ranking.picks:
        assert p.reason.like in {"x000", "x003"}
        assert p.reason.text() == f"like {p.reason.like} that you marked"


def test_reasons_without_a_similar_mark_name_the_words() -> None:
    assert Reason(words=("protein", "folding")).text() == (
        "about “protein”, “folding”, like papers you marked"
    )
    corpus = _corpus()
    # A model that likes protein words explains a protein paper by them.
    model = train(corpus, [Example("x000", 1.0), Example("y001", -1.0)])
    [reason] = explain(corpus, model, ["x003"], Signals())
    assert reason.like is None
    assert reason.words
    assert set(reason.words) <= set(PROTEIN)


def test_training_set_weighs_marks_above_follows_and_samples_negatives() -> None:
    corpus = _corpus()
    theirs = frozenset(p for p in corpus.ids if p.startswith("z"))
    found = examples(corpus, Signals(more=("x000",), less=("y001",), theirs=theirs), seed=5)
    by_id = {e.paper_id: e for e in found}
    assert by_id["x000"].label == 1.0
    assert by_id["x000"].weight == 1.0
    assert by_id["y001"].label == -1.0
    assert by_id["y001"].weight == 1.0
    assert {e.weight for e in found if e.paper_id in theirs} == {0.3}
    negatives = [e for e in found if e.label < 0 and e.paper_id != "y001"]
    assert len(negatives) >= 10
    assert not {e.paper_id for e in negatives} & (theirs | {"x000"})
    # Seeded: the same person gets the same training set every run.
    assert found == examples(corpus, Signals(more=("x000",), less=("y001",), theirs=theirs), seed=5)
