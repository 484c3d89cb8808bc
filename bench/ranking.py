"""Benchmark: a ranking per person (bot/taste), its quality and its cost.

    .venv/bin/python bench/ranking.py [--readers 10000] [--rounds 3]
    .venv/bin/python bench/ranking.py --quick      # 1,000 readers for the cost part

Quality, offline, on held-out weeks (issue 16): simulated readers have hidden interests
(2-3 latent themes) and mark 10-20 papers of earlier weeks "more" (a paper of one of
their themes) or "less" (another), 10% of marks flipped as noise. Each reader also has
a keyword alert: the two words most typical of each of their themes. On each held-out
week, three orders of the week's papers are scored against the hidden interests:
chronological (newest first), keyword-only (alert-word hits, then newest) and learned
(the reader's model, trained on their marks with their alert hits as weak positives,
exactly as the digest does). Figures: precision@10 and nDCG@10, mean over readers and
weeks. Two corpora: the bundled sample (bot/data, themes recovered from the generator's
title templates) and a generated one (30 themes, 8 weeks of 1,000 papers).
Goal: learned p@10 >= 2x chronological.

Cost, side by side in one run, alternating (bench/sidebyside.py): building and rendering
the digests of `--readers` readers for one week of the generated corpus, without and with
their rankings (the week's tf-idf corpus, the readers' models, scores and picks, batched
as the worker does: digests/taste.py `tastes_of`). Goal: < 20% more.

Models are trained when people react, not in the digest run: the leader's training job
(digests/training.py: `train_all`, then each model packed for the `taste_model` table)
trains whoever reacted since their model was stored. Each ranked round is a later digest
run: since the last one, 10% of the readers marked one more paper and the job trained
them (timed apart, printed per run and per reader, never inside the digest figure); the
digest run finds every model trained. Printed apart too: the job's backlog on a first
deploy (every reader trained, as a first digest run used to do), and the first digest
run after a restart (a new process, a new vocabulary: every model read back from its
packed bytes, `model.unpack`; the store's query itself is not in the figure, there is
no database here). Also each reader's training time alone (goal < 50 ms).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sidebyside import Series, alternate, header, report, rounds_arg
from bot import collector
from bot.ask.terms import content_words
from bot.data import make_sample
from bot.subscriptions.taste import Marks, model_key
from bot.taste.batch import Week
from bot.taste.cache import Models
from bot.taste.features import Corpus, Vocabulary
from bot.taste.model import pack, train, unpack
from bot.taste.plan import Signals, examples, rank
from digests.build import DigestPaper, Recipient, RecipientData, TopicInfo, WeekData, build_digest
from digests.links import PublicLinks
from digests.render import DigestRenderer, MailIdentity
from digests.taste import fingerprint, tastes_of, train_all

K = 10
AS_OF = datetime(2026, 9, 28, tzinfo=UTC)


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    theme: str
    week: int  # 0 = the newest
    age_hours: float


# -- corpora ---------------------------------------------------------------------------


def sample_docs() -> list[Doc]:
    """The bundled sample, each paper's theme recovered from its title template."""
    patterns = []
    for slug, (_w, _cats, titles, _pool) in make_sample.T.items():
        extra = make_sample.LATEX_TITLES if slug == "rl-for-llm-agents" else []
        for t in [*titles, *extra]:
            t = t.replace("{{", "{").replace("}}", "}")
            patterns.append((re.compile(re.escape(t).replace(r"\{m\}", ".+?") + "$"), slug))
    raw = json.loads(Path(make_sample.OUT).read_text(encoding="utf-8"))
    docs, seen = [], set()
    for r in raw:
        theme = next((s for p, s in patterns if p.match(r["title"])), None)
        if theme is None or r["id"] in seen:
            continue
        seen.add(r["id"])
        hours = float(r["offset_hours"])
        docs.append(Doc(r["id"], f"{r['title']}\n{r['abstract']}", theme, int(hours // 168), hours))
    return docs


def _lexicon(rng: random.Random, n: int) -> list[str]:
    syllables = [a + b for a in "bdfgklmnprstvz" for b in "aeiou"]
    words: set[str] = set()
    while len(words) < n:
        words.add("".join(rng.choices(syllables, k=rng.randint(2, 4))))
    return sorted(words)


def generated_docs(themes: int = 30, weeks: int = 8, per_week: int = 1000) -> list[Doc]:
    """Papers of latent themes. Themes come in families of five that share most of their
    words (as "RL for agents" and "reward models" do), so a theme is told from its
    siblings by a few words among many: theme words (Zipf) are a sixth of a paper, the
    rest shared words, and a third of the papers borrow from a second theme."""
    rng = random.Random(16)
    own, family_words, families = 10, 15, themes // 5
    lexicon = _lexicon(rng, themes * own + families * family_words + 600)
    shared = lexicon[themes * own + families * family_words :]
    vocab = {}
    for i in range(themes):
        mine = lexicon[i * own : (i + 1) * own]
        start = themes * own + (i // 5) * family_words
        kin = lexicon[start : start + family_words]
        # Interleaved, so the most frequent theme words are family words as often as not.
        vocab[f"t{i}"] = [w for pair in zip(kin, [*mine, *kin[own:]], strict=False) for w in pair]
    popularity = [1 / (i + 1) ** 0.7 for i in range(themes)]
    zipf_shared = [1 / (i + 1) ** 0.8 for i in range(len(shared))]
    docs = []
    for w in range(weeks):
        for j in range(per_week):
            theme = rng.choices(list(vocab), popularity)[0]
            other = rng.choice(list(vocab))
            zipf = [1 / (i + 1) ** 0.8 for i in range(len(vocab[theme]))]
            words = rng.choices(vocab[theme], zipf, k=12)
            words += rng.choices(vocab[other], k=6 if rng.random() < 0.3 else 1)
            words += rng.choices(shared, zipf_shared, k=60)
            rng.shuffle(words)
            title = " ".join(words[:9])
            hours = w * 168 + rng.uniform(0, 168)
            docs.append(Doc(f"g{w}.{j:05d}", f"{title}\n{' '.join(words)}", theme, w, hours))
    return docs


# -- readers ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Reader:
    interests: frozenset[str]
    marks: Marks
    keywords: frozenset[str]


def typical_words(docs: list[Doc]) -> dict[str, list[str]]:
    """Per theme, its words by how much more often they occur there than elsewhere."""
    by_theme: dict[str, Counter[str]] = defaultdict(Counter)
    total: Counter[str] = Counter()
    for d in docs:
        words = set(content_words(d.text))
        by_theme[d.theme].update(words)
        total.update(words)
    out = {}
    for theme, counts in by_theme.items():
        n = sum(1 for d in docs if d.theme == theme)
        lift = {w: c / n - (total[w] - c) / max(1, len(docs) - n) for w, c in counts.items()}
        out[theme] = sorted(lift, key=lambda w: (-lift[w], w))
    return out


def make_readers(docs: list[Doc], train_weeks: set[int], n: int, seed: int) -> list[Reader]:
    rng = random.Random(seed)
    themes = sorted({d.theme for d in docs})
    past = [d for d in docs if d.week in train_weeks]
    typical = typical_words(past)
    readers = []
    for _ in range(n):
        interests = frozenset(rng.sample(themes, min(len(themes) - 1, rng.randint(2, 3))))
        liked = [d for d in past if d.theme in interests]
        other = [d for d in past if d.theme not in interests]
        more: list[str] = []
        less: list[str] = []
        for _ in range(rng.randint(10, 20)):
            relevant = rng.random() < 0.6 and liked
            doc = rng.choice(liked if relevant else other)
            said_more = bool(relevant) != (rng.random() < 0.1)  # 10% noise
            (more if said_more else less).append(doc.id)
        keywords = frozenset(w for t in interests for w in typical[t][:2])
        readers.append(Reader(interests, Marks(tuple(more), tuple(less)), keywords))
    return readers


# -- quality ---------------------------------------------------------------------------


def precision(order: list[Doc], interests: frozenset[str]) -> float:
    return sum(d.theme in interests for d in order[:K]) / K


def ndcg(order: list[Doc], interests: frozenset[str], relevant: int) -> float:
    gain = sum(1 / math.log2(i + 2) for i, d in enumerate(order[:K]) if d.theme in interests)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(K, relevant)))
    return gain / ideal if ideal else 0.0


def evaluate(name: str, docs: list[Doc], held_out: list[int], readers: int) -> None:
    train_weeks = {d.week for d in docs} - set(held_out)
    people = make_readers(docs, train_weeks, readers, seed=len(docs))
    by_id = {d.id: d for d in docs}
    sums: dict[str, list[float]] = defaultdict(list)
    for week in held_out:
        shown = sorted((d for d in docs if d.week == week), key=lambda d: (d.age_hours, d.id))
        corpus = Corpus((d.id, d.text) for d in shown)
        corpus.add((p, by_id[p].text) for r in people for p in r.marks.ids)
        words = {d.id: Counter(content_words(d.text)) for d in shown}
        for i, r in enumerate(people):
            relevant = sum(d.theme in r.interests for d in shown)
            hits = {d.id: sum(words[d.id][w] for w in r.keywords) for d in shown}
            keyword = sorted(shown, key=lambda d: -hits[d.id])  # stable: newest among equals
            theirs = frozenset(p for p, h in hits.items() if h)
            signals = Signals(r.marks.more, r.marks.less, theirs)
            ranking = rank(corpus, signals, picks=0, seed=i)
            assert ranking is not None
            learned = sorted(shown, key=lambda d: -ranking.scores[d.id])
            for label, order in (("chronological", shown), ("keyword-only", keyword),
                                 ("learned", learned)):  # fmt: skip
                sums[f"p {label}"].append(precision(order, r.interests))
                sums[f"n {label}"].append(ndcg(order, r.interests, relevant))
    mean = {k: sum(v) / len(v) for k, v in sums.items()}
    sizes = Counter(d.week for d in docs)
    print(f"{name}: {len(docs)} papers, {len({d.theme for d in docs})} themes, "
          f"{readers} readers, held-out weeks {held_out} "
          f"({', '.join(str(sizes[w]) for w in held_out)} papers)")  # fmt: skip
    for label in ("chronological", "keyword-only", "learned"):
        print(
            f"  {label:<14} precision@10 {mean['p ' + label]:.3f}"
            f"   nDCG@10 {mean['n ' + label]:.3f}"
        )
    ratio = mean["p learned"] / mean["p chronological"]
    print(f"  learned / chronological precision@10: {ratio:.2f}x (goal >= 2x); "
          f"learned / keyword-only: {mean['p learned'] / mean['p keyword-only']:.2f}x")  # fmt: skip
    sys.stdout.flush()


# -- cost ------------------------------------------------------------------------------


def digest_week(docs: list[Doc], week: int) -> WeekData:
    themes = sorted({d.theme for d in docs})
    papers, by_topic = {}, defaultdict(list)
    for d in docs:
        if d.week == week:
            papers[d.id] = DigestPaper(d.id, d.text.split("\n")[0][:120], ("Ada Lovelace",),
                                       f"https://example.org/{d.id}",
                                       AS_OF - timedelta(hours=d.age_hours % 168),
                                       "cs.LG")  # fmt: skip
            by_topic[d.theme].append(d.id)
    topics = {t: TopicInfo(t, f"Theme {t}") for t in themes}
    return WeekData("2026-W39", AS_OF, topics, {}, dict(by_topic), papers, "cs")


CHANGED = 0.1  # readers whose marks changed since the last digest run (retrained)


def cost(docs: list[Doc], readers: int, rounds: int) -> None:
    week_no = 0
    week = digest_week(docs, week_no)
    by_id = {d.id: d for d in docs}
    own = [(d.id, d.text) for d in docs if d.week == week_no]
    people = make_readers(docs, {1, 2, 3}, readers, seed=7)
    data = [
        RecipientData(Recipient(i + 1, f"r{i}@example.org"), frozenset(sorted(r.interests)[:2]))
        for i, r in enumerate(people)
    ]
    links = PublicLinks(
        "https://bench.example.org", lambda r, p: f"{p}.{r.id}", mail_from="d@b.org"
    )
    identity = MailIdentity("papertide <d@b.org>")
    # As in the worker: one vocabulary and one set of kept models for the process.
    models = Models(Vocabulary())
    marks = [r.marks for r in people]
    past = [d.id for d in docs if d.week in {1, 2, 3}]
    rng = random.Random(11)
    stored: dict[int, tuple[str, bytes]] = {}  # stands in for the taste_model table

    cpu: dict[str, list[float]] = {"with ranking": [], "without": [], "job": []}

    # Both cases as digests/schedule.py runs them: the cyclic collector paused while
    # the batch is built and rendered (bot/collector.py).
    def plain() -> float:
        renderer = DigestRenderer(links=links, identity=identity)
        start, cpu_start = time.perf_counter(), time.process_time()
        with collector.paused():
            for d in data:
                digest = build_digest(d, week, papers_per_topic=5)
                assert digest is not None
                renderer.render(digest)
        cpu["without"].append(time.process_time() - cpu_start)
        return time.perf_counter() - start

    def job(who: list[int]) -> int:
        """The training job after reactions: the week's corpus with their marks, their
        models trained and packed for the store (digests/taste.py `train_tastes`)."""
        cpu_start = time.process_time()
        models.vocabulary.forget(pid for pid, _text in own)  # a new job run counts anew
        corpus = Corpus(own, models.vocabulary)
        corpus.add((p, by_id[p].text) for i in who for p in marks[i].ids)
        readers = [(data[i], marks[i]) for i in who]
        before = models.trained
        warm, where = train_all(readers, week, corpus, models)
        models.take_fresh()
        for j, (model, _s) in zip(where, warm, strict=True):
            d, m = readers[j]
            stored[d.recipient.id] = (model_key(fingerprint(d, m)), pack(model, models.vocabulary))
        cpu["job"].append(time.process_time() - cpu_start)
        return models.trained - before

    def change_marks() -> list[int]:
        """A week passes: CHANGED of the readers mark one more paper."""
        who = rng.sample(range(readers), int(readers * CHANGED))
        for i in who:
            marks[i] = Marks((rng.choice(past), *marks[i].more), marks[i].less)
        return who

    def restore() -> None:
        """What the digest run does for a reader whose model this process lacks
        (digests/taste.py `_ready`): their fingerprint, its key, the stored model read
        back over this process's vocabulary."""
        for d, m in zip(data, marks, strict=True):
            fp = fingerprint(d, m)
            if models.held(d.recipient.id) != fp:
                found = stored.get(d.recipient.id)
                if found is not None and found[0] == model_key(fp):
                    models.keep(d.recipient.id, fp, unpack(found[1], models.vocabulary))

    def ranked() -> float:
        # The week's papers are new to the process (their words are counted again);
        # marked papers of earlier weeks were counted in earlier runs.
        models.vocabulary.forget(pid for pid, _text in own)
        renderer = DigestRenderer(links=links, identity=identity)
        start, cpu_start = time.perf_counter(), time.process_time()
        restore()
        corpus = Corpus(own, models.vocabulary)
        corpus.add((p, by_id[p].text) for m in marks for p in m.ids)
        with collector.paused():  # as digests/taste.py `with_tastes` and digests/schedule.py
            pairs = list(zip(data, marks, strict=True))
            tastes = tastes_of(pairs, week, Week(corpus), models=models)
            built = []
            for d, taste in zip(data, tastes, strict=True):
                with_taste = RecipientData(d.recipient, d.follows, d.alerts, taste)
                digest = build_digest(with_taste, week, papers_per_topic=5)
                assert digest is not None
                built.append(digest)
            renderer.warm([d for d in built if d.missed])  # as digests/schedule.py does
            for digest in built:
                renderer.render(digest)
        cpu["with ranking"].append(time.process_time() - cpu_start)
        return time.perf_counter() - start

    plain()  # warm up templates
    cpu["without"].clear()
    # A first deploy: the job's backlog is every reader with marks.
    backlog = job(list(range(readers)))
    backlog_cpu = cpu["job"].pop()
    # A restart: a new process, a new vocabulary, nothing in memory.
    models = Models(Vocabulary())
    first = ranked()  # every model read back from the store
    first_cpu = cpu["with ranking"].pop()
    trained_before = models.trained

    def next_week() -> float:
        job(change_marks())
        return ranked()

    got = alternate({"with ranking": next_week, "without": plain}, rounds)
    assert models.trained - trained_before == int(readers * CHANGED) * len(cpu["job"]), (
        "the digest runs trained someone"
    )
    report(
        f"build + render the digests of {readers:,} readers, seconds",
        Series("with ranking", got["with ranking"]),
        Series("without", got["without"]),
        higher_is_better=False,
        note=f"{len(week.papers):,} papers in the week, 2 topics followed, 10-20 marks each; "
        f"{CHANGED:.0%} of the readers' marks changed since the last run, their models "
        "trained by the training job (below), not in the digest run",
    )
    # CPU seconds too: on a shared, loaded host wall time mostly measures the neighbours.
    report(
        f"the same, CPU seconds of this process (time.process_time), {readers:,} readers",
        Series("with ranking", cpu["with ranking"]),
        Series("without", cpu["without"]),
        higher_is_better=False,
    )
    floor = sorted(cpu["without"])[len(cpu["without"]) // 2]
    jobs = sorted(cpu["job"])
    changed = int(readers * CHANGED)
    print(f"the training job, per week's reactions ({changed:,} readers retrained, corpus "
          f"included): CPU median {jobs[len(jobs) // 2]:.3f} s = "
          f"{1000 * jobs[len(jobs) // 2] / changed:.2f} ms a reader; "
          f"first deploy, all {backlog:,} readers: CPU {backlog_cpu:.3f} s "
          f"({1000 * backlog_cpu / max(1, backlog):.2f} ms a reader)")  # fmt: skip
    print(f"first digest run after a restart (every model read back from the store, "
          f"its query not included): wall {first:.3f} s, CPU {first_cpu:.3f} s = "
          f"{first_cpu / floor:.1f}x the median CPU without")  # fmt: skip
    corpus = Corpus((d.id, d.text) for d in docs if d.week == week_no)
    corpus.add((p, by_id[p].text) for r in people for p in r.marks.ids)
    times = []
    for i, (d, r) in enumerate(zip(data[:1000], people[:1000], strict=True)):
        found = examples(corpus, taste_signals(d, week, r), seed=i)
        start = time.perf_counter()
        train(corpus, found)
        times.append(1000 * (time.perf_counter() - start))
    times.sort()
    print(f"one reader's model, training only, ms over {len(times)} readers (goal < 50): "
          f"min {times[0]:.3f}  median {times[len(times) // 2]:.3f}  "
          f"p99 {times[int(len(times) * 0.99)]:.3f}  max {times[-1]:.3f}")  # fmt: skip


def taste_signals(d: RecipientData, week: WeekData, r: Reader) -> Signals:
    theirs = frozenset(p for s in d.follows for p in week.papers_by_topic.get(s, ()))
    return Signals(r.marks.more, r.marks.less, theirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--readers", type=int, default=10_000)
    parser.add_argument("--eval-readers", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1,000 readers for the cost")
    parser.add_argument("--part", choices=("all", "quality", "cost"), default="all")
    args = parser.parse_args()
    readers = 1000 if args.quick else args.readers
    rounds = rounds_arg(args.rounds)
    header(f"ranking per person: quality on held-out weeks, cost for {readers:,} readers", rounds)
    generated = generated_docs()
    if args.part in ("all", "quality"):
        evaluate("bundled sample", sample_docs(), [0, 1], args.eval_readers)
        evaluate("generated corpus", generated, [0, 1], args.eval_readers)
    if args.part in ("all", "cost"):
        cost(generated, readers, rounds)


if __name__ == "__main__":
    main()
