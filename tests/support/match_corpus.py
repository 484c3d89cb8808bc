"""A generated, seeded arXiv day and a realistic population of alerts and topics.

Shared by bench/match.py and the engine-vs-baseline test. Word use follows Zipf's
law (a few words everywhere, a long tail of rare ones); alerts pick their terms with
a Zipf skew too, from the topical part of the vocabulary, so popular terms are
followed by many people. Papers carry LaTeX, hyphenated compounds, accented names.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import accumulate

from bot.types import Author, PaperRecord


def _split(text: str) -> list[str]:
    return text.split()


_COMMON = _split(
    "the of and a to in we is for that on with this by as are our an be from which "
    "model learning method results approach data show propose based can using "
    "performance models training language large agents agent reinforcement policy "
    "task tasks framework new network neural problem paper study set two time such "
    "these"
)
_DOMAIN = _split(
    "grpo alfworld webshop transformer diffusion retrieval reasoning benchmark "
    "alignment preference reward planner robot graph kernel bayesian quantum lattice "
    "spectral sparse federated privacy adversarial contrastive multimodal tokenizer "
    "distillation pruning quantization curriculum exploration offline online "
    "hierarchical"
)
_SYLLABLES = _split(
    "ka ri to mi sa ne lo pu ve da zor el an tik ser gon mar lis qua bri fen dol rav "
    "tem cin hal jor wex uly pon sta gre vil"
)
_FIRST = _split(
    "Yi Wei Li Xin Jun Hao Ming Ana José Zoë Çağatan Łukasz Søren Émilie Jürgen Maria "
    "John Sarah David Priya Arjun Kenji Yuki Fatima Omar Olga Ivan Lucía Mateo Chloé "
    "Noah Emma Liam Mia Ahmed Aisha Björn Siobhán Nguyen Thanh Hyun Min Ji"
)
_LAST = _split(
    "Wu Zhang Wang Li Chen Liu Yang Huang Zhao Zhou Müller Schmidt García Martínez "
    "Rossi Smith Johnson Brown Kim Park Lee Nguyen Tran Singh Patel Kumar Sato Suzuki "
    "Tanaka Ivanov Petrov Kowalski Nowak Dubois Lefèvre Jensen Hansen O'Brien Demir "
    "Yılmaz Öztürk Silva Santos Costa Cohen Levi Novak Horváth"
)
_PLACES = _split("Tsinghua Stanford Oxford Toronto Zürich Paris Kyoto Berkeley Delhi São-Paulo")
CATEGORIES = _split(
    "cs.LG cs.AI cs.CL cs.CV cs.RO cs.IR cs.CR cs.NE cs.MA cs.SE cs.DS cs.DC cs.HC "
    "stat.ML stat.ME math.OC math.PR math.ST quant-ph hep-th hep-ph astro-ph.GA "
    "astro-ph.CO cond-mat.mtrl-sci cond-mat.stat-mech eess.SP eess.SY physics.optics "
    "q-bio.NC"
)
_LATEX = (r"$\mu$P", r"$\alpha$-divergence", r"\emph{robust}", r"$O(n^2)$", r"Schr\"odinger")


def _zipf(n: int, s: float = 1.07) -> list[float]:
    return list(accumulate(1.0 / (rank**s) for rank in range(1, n + 1)))


class Vocabulary:
    """Words by popularity rank (0 = most common), collocations, people, places."""

    def __init__(self, rng: random.Random, size: int = 30_000) -> None:
        seen = dict.fromkeys(_COMMON + _DOMAIN)
        while len(seen) < size:
            word = "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))
            seen.setdefault(word)
        self.words = list(seen)
        self.word_weights = _zipf(len(self.words))
        # People alert on specific terms, not on "model": the topical tail, mildly skewed.
        self.topical = self.words[size // 10 :]
        self.topical_weights = _zipf(len(self.topical), 0.6)
        self.phrases = [
            tuple(rng.choices(self.words[size // 30 : size * 2 // 3], k=rng.choice((2, 2, 3))))
            for _ in range(20_000)
        ]
        self.phrase_weights = _zipf(len(self.phrases), 1.0)
        self.alert_phrases = self.phrases[50:]  # the most common ones are too broad to follow
        self.alert_phrase_weights = _zipf(len(self.alert_phrases), 0.5)
        surnames = _LAST + [
            "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 3))).capitalize()
            for _ in range(3000)
        ]
        given = _FIRST + [
            rng.choice(_SYLLABLES).capitalize() + rng.choice(_SYLLABLES) for _ in range(400)
        ]
        self.people = [f"{rng.choice(given)} {rng.choice(surnames)}" for _ in range(60_000)]
        self.people_weights = _zipf(len(self.people), 0.5)
        self.affiliations = [
            f"{rng.choice(('University of', 'Institute of'))} {rng.choice(_PLACES)}"
            + ("" if rng.random() < 0.5 else f" {rng.choice(_LAST)} Lab")
            for _ in range(600)
        ]
        self.category_weights = _zipf(len(CATEGORIES), 1.2)


def _text(rng: random.Random, vocab: Vocabulary, n: int) -> str:
    out = rng.choices(vocab.words, cum_weights=vocab.word_weights, k=n)
    for _ in range(max(1, n // 80)):
        phrase = rng.choices(vocab.phrases, cum_weights=vocab.phrase_weights)[0]
        sep = "-" if rng.random() < 0.3 else " "
        out.insert(rng.randrange(len(out) + 1), sep.join(phrase))
    if rng.random() < 0.3:
        out.insert(rng.randrange(len(out) + 1), rng.choice(_LATEX))
    return " ".join(out).capitalize() + "."


def generate_papers(rng: random.Random, vocab: Vocabulary, n: int) -> list[PaperRecord]:
    """`n` papers of one announcement day: real-length abstracts (120-260 words)."""
    day = datetime(2026, 7, 1, 18, tzinfo=UTC)
    papers = []
    for i in range(n):
        names = rng.choices(vocab.people, cum_weights=vocab.people_weights, k=rng.randint(1, 8))
        authors = tuple(
            Author(name, tuple(rng.sample(vocab.affiliations, rng.randint(0, 2))))
            for name in dict.fromkeys(names)
        )
        cats = rng.choices(CATEGORIES, cum_weights=vocab.category_weights, k=rng.randint(1, 3))
        when = day - timedelta(minutes=i)
        papers.append(
            PaperRecord(
                id=f"2607.{i:05d}",
                version=1,
                title=_text(rng, vocab, rng.randint(6, 14)),
                abstract=_text(rng, vocab, rng.randint(120, 260)),
                authors=authors,
                categories=tuple(dict.fromkeys(cats)),
                published=when,
                updated=when,
                source="bench",
                comment=f"{rng.randint(4, 40)} pages, {rng.randint(1, 12)} figures"
                if rng.random() < 0.5
                else "",
                journal_ref="" if rng.random() < 0.9 else f"J. Mach. Learn. Res. {i % 30}",
            )
        )
    return papers


def _word(rng: random.Random, vocab: Vocabulary) -> str:
    return rng.choices(vocab.topical, cum_weights=vocab.topical_weights)[0]


def _phrase(rng: random.Random, vocab: Vocabulary) -> str:
    phrase = rng.choices(vocab.alert_phrases, cum_weights=vocab.alert_phrase_weights)[0]
    return "-".join(phrase) if rng.random() < 0.3 else '"' + " ".join(phrase) + '"'


def _author(rng: random.Random, vocab: Vocabulary) -> str:
    first, last = rng.choices(vocab.people, cum_weights=vocab.people_weights)[0].split(" ", 1)
    form = rng.random()
    if form < 0.5:
        return f'au:"{first} {last}"'
    if form < 0.9:
        return f"au:{last.replace(' ', '-')}_{first[0]}"
    return f"au:{last.replace(' ', '-')}"


def generate_alert(rng: random.Random, vocab: Vocabulary) -> str:
    """One alert as people write them: mostly one word, phrase or name; some booleans."""
    kind = rng.random()
    field = rng.choice(("", "", "ti:", "abs:"))
    if kind < 0.35:
        return field + _word(rng, vocab)
    if kind < 0.50:
        return field + _phrase(rng, vocab)
    if kind < 0.65:
        return _author(rng, vocab)
    if kind < 0.70:
        return field + _word(rng, vocab) + "*"
    if kind < 0.78:
        return f"ti:{_word(rng, vocab)} AND abs:{_phrase(rng, vocab)}"
    if kind < 0.86:
        return (
            f"abs:({_word(rng, vocab)} OR {_word(rng, vocab)}) ANDNOT cat:{rng.choice(CATEGORIES)}"
        )
    if kind < 0.93:
        return f"{_phrase(rng, vocab)} AND cat:{rng.choice(CATEGORIES).split('.')[0]}.*"
    return f"{_author(rng, vocab)} OR ({_word(rng, vocab)} AND {_word(rng, vocab)})"


def generate_topic(rng: random.Random, vocab: Vocabulary) -> tuple[str, list[str]]:
    """A topic: (query, categories); a few are category-only."""
    cats = rng.sample(CATEGORIES[:12], rng.randint(1, 3))
    if rng.random() < 0.1:
        return "", cats
    terms = [_word(rng, vocab) for _ in range(rng.randint(1, 3))]
    terms += [_phrase(rng, vocab) for _ in range(rng.randint(1, 3))]
    return "abs:(" + " OR ".join(terms) + f") OR ti:{_word(rng, vocab)}", cats
