"""A generated, seeded corpus of weeks with planted bursts and planted decoys.

Shared by bench/emerging.py and the emerging-topic tests. Background text follows the
Zipf vocabulary of tests/support/match_corpus.py (with its flat collocations). Planted
*bursts* are 2- and 3-word phrases that appear in 10-30 papers of the last week and at
most a trickle before (some made of new words, some of everyday words, some written
with a hyphen: 'test-time scaling'); planted *decoys* are phrases frequent in every
week alike (2-5% of all papers), which a detector must never report.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.catalog.emerging import Doc
from bot.store.models import Paper
from tests.support.match_corpus import Vocabulary

_NEW = [
    "zyl",
    "quor",
    "vex",
    "plim",
    "drav",
    "snor",
    "blen",
    "trux",
    "gowl",
    "frim",
    "kelp",
    "mosk",
]


@dataclass(frozen=True, slots=True)
class Planted:
    docs: list[Doc]
    bursts: list[tuple[str, ...]]  # folded words of each planted burst
    decoys: list[tuple[str, ...]]
    burst_papers: dict[tuple[str, ...], list[str]]  # last week's papers of each burst


def _text(rng: random.Random, vocab: Vocabulary, n: int) -> str:
    out = rng.choices(vocab.words, cum_weights=vocab.word_weights, k=n)
    for _ in range(max(1, n // 80)):
        out.insert(
            rng.randrange(len(out) + 1),
            " ".join(rng.choices(vocab.phrases, cum_weights=vocab.phrase_weights)[0]),
        )
    return " ".join(out).capitalize() + "."


def _burst_phrase(rng: random.Random, vocab: Vocabulary, i: int) -> tuple[str, ...]:
    mid = vocab.words[200:3000]
    new = f"{_NEW[i % len(_NEW)]}{rng.choice(_NEW)}{i}"
    kind = i % 3
    if kind == 0:  # a new word beside an everyday one: 'zylquor3 scaling'
        return (new, rng.choice(mid))
    if kind == 1:  # three words, the first new: 'test time scaling'
        return (new, rng.choice(mid), rng.choice(mid))
    return (rng.choice(mid), rng.choice(mid))  # everyday words that newly go together


def _written(rng: random.Random, phrase: tuple[str, ...]) -> str:
    if len(phrase) > 2 and rng.random() < 0.5:
        return f"{phrase[0]}-{phrase[1]} " + " ".join(phrase[2:])
    return " ".join(phrase)


def planted_corpus(
    seed: int = 16,
    *,
    weeks: int = 12,
    per_week: int = 5000,
    bursts: int = 20,
    decoys: int = 20,
    vocab: Vocabulary | None = None,
) -> Planted:
    """`weeks` x `per_week` papers; the last week is the one tested."""
    rng = random.Random(seed)
    vocab = vocab or Vocabulary(rng, size=20_000)
    burst_list = list(dict.fromkeys(_burst_phrase(rng, vocab, i) for i in range(bursts)))
    decoy_list: list[tuple[str, ...]] = [
        (rng.choice(vocab.words[100:2000]), f"{rng.choice(_NEW)}{rng.choice(_NEW)}d{i}")
        for i in range(decoys)
    ]
    decoy_rate = [rng.uniform(0.02, 0.05) for _ in decoy_list]
    burst_size = [rng.randint(10, 30) for _ in burst_list]
    trickle = [rng.random() < 0.5 for _ in burst_list]
    docs: list[Doc] = []
    burst_papers: dict[tuple[str, ...], list[str]] = {b: [] for b in burst_list}
    last = weeks - 1
    for week in range(weeks):
        carriers: dict[int, list[int]] = {}
        for b, size in enumerate(burst_size):
            count = size if week == last else rng.randint(0, 1) if trickle[b] else 0
            for paper in rng.sample(range(per_week), count):
                carriers.setdefault(paper, []).append(b)
        for i in range(per_week):
            pid = f"w{week:02d}.{i:05d}"
            title = _text(rng, vocab, rng.randint(6, 14))
            abstract = _text(rng, vocab, rng.randint(120, 260))
            extra = [
                _written(rng, decoy_list[d]) for d, r in enumerate(decoy_rate) if rng.random() < r
            ]
            for b in carriers.get(i, ()):
                extra.append(_written(rng, burst_list[b]))
                if week == last:
                    burst_papers[burst_list[b]].append(pid)
            if extra:
                if rng.random() < 0.3:
                    title = f"{title[:-1]} with {extra[0]}."
                    extra = extra[1:]
                abstract = f"{abstract} We study {', '.join(extra)}."
            docs.append(Doc(pid, week, title, abstract, "cs.LG"))
    return Planted(docs, burst_list, decoy_list, burst_papers)


# --- a small store-side corpus: flat background, one burst, one decoy -----------------

_BACKGROUND = (
    "Graph neural network methods for molecule property prediction",
    "Sparse attention kernels for long context language models",
    "Bayesian optimisation of robot controllers under noise",
    "Federated learning with differential privacy guarantees",
    "Contrastive pretraining of speech encoders",
    "Quantum circuit compilation with reinforcement learning",
)
BURST_WORDS = ("test", "time", "scaling")
DECOY_WORDS = ("graph", "neural", "network")


async def seed_burst(
    sessions: async_sessionmaker[AsyncSession],
    as_of: datetime,
    *,
    per_week: int = 24,
    burst: int = 8,
    burst_title: str = "Test-Time Scaling for {i}",
) -> list[str]:
    """12 weeks of flat papers ending at `as_of` (every third one about the decoy, graph
    neural networks, in every week alike) and `burst` papers about test-time scaling in
    the last week only. Returns the burst papers' ids."""
    start = as_of - timedelta(weeks=12)
    burst_ids = []
    async with sessions() as session, session.begin():
        for week in range(12):
            monday = start + timedelta(weeks=week)
            count = per_week + (burst if week == 11 else 0)
            for i in range(count):
                pid = f"2611.{week:02d}{i:03d}"
                is_burst = week == 11 and i >= per_week
                title = burst_title.format(i=i) if is_burst else _BACKGROUND[i % len(_BACKGROUND)]
                when = monday + timedelta(hours=1 + i)
                session.add(
                    Paper(
                        id=pid, title=title, abstract=f"{title}. Paper number {week}-{i}.",
                        authors=[{"name": f"Author {i}", "affiliations": []}],
                        categories=["cs.LG"], primary_category="cs.LG",
                        published=when, updated=when,
                    )
                )  # fmt: skip
                if is_burst:
                    burst_ids.append(pid)
    return burst_ids
