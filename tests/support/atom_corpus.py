"""Varied, realistic arXiv API entries (Atom, arXiv's recorded format) for ingest benches.

The papers come from tests/support/match_corpus.py (Zipf-distributed words, LaTeX,
accented and non-Latin-script names, affiliations), spread evenly over a window, with
what the bundled sample (bot/data/make_sample.py) also has: journal refs, DOIs, comments,
cross-lists, and a few collaboration papers with long author lists (50 to 400 names),
which are the slow end of parsing and of the `authors` JSON column.
"""

from __future__ import annotations

import random
from dataclasses import replace
from datetime import datetime, timedelta
from xml.sax.saxutils import escape

from bot.types import Author, PaperRecord
from tests.support.ingest import feed_page
from tests.support.match_corpus import Vocabulary, generate_papers

__all__ = ["arxiv_id", "atom_entry", "feed_page", "generate_records"]

_SCRIPTS = ("Иван Петров", "李 伟", "Ελένη Παπαδοπούλου", "Đặng Thị Mai", "محمد علي", "佐藤 健")


def arxiv_id(i: int) -> str:
    """A distinct new-style id for the i-th paper (more than 99,999 spill into later months)."""
    return f"{2601 + i // 99000}.{10000 + i % 99000:05d}"


def _collaboration(rng: random.Random, vocab: Vocabulary) -> tuple[Author, ...]:
    names = rng.sample(vocab.people, rng.randint(50, 400))
    names += rng.sample(_SCRIPTS, 2)
    labs = rng.sample(vocab.affiliations, 20)
    return tuple(Author(n, (labs[k % 20],)) for k, n in enumerate(dict.fromkeys(names)))


def generate_records(
    rng: random.Random, n: int, *, end: datetime, span: timedelta
) -> list[PaperRecord]:
    """`n` papers submitted evenly over (end - span, end], oldest first."""
    vocab = Vocabulary(rng)
    step = span / max(n, 1)
    out = []
    for i, paper in enumerate(generate_papers(rng, vocab, n)):
        when = end - span + step * (i + 1)
        authors = _collaboration(rng, vocab) if rng.random() < 0.02 else paper.authors
        if rng.random() < 0.05:
            authors += (Author(rng.choice(_SCRIPTS)),)
        version = 2 if rng.random() < 0.1 else 1
        out.append(
            replace(
                paper,
                id=arxiv_id(i),
                authors=authors,
                published=when,
                updated=when + timedelta(days=rng.randint(1, 9)) if version > 1 else when,
                version=version,
                doi=f"10.{1000 + i % 9000}/bench.{i}" if rng.random() < 0.15 else "",
            )
        )
    return out


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def atom_entry(paper: PaperRecord) -> str:
    """One `<entry>` as the arXiv API writes it (title wrapped over lines, as arXiv does)."""
    pid = f"{paper.id}v{paper.version}"
    title = escape(paper.title)
    cut = title.find(" ", len(title) // 2)
    if cut > 0:
        title = title[:cut] + "\n  " + title[cut + 1 :]
    authors = "".join(
        f"<author><name>{escape(a.name)}</name>"
        + "".join(f"<arxiv:affiliation>{escape(x)}</arxiv:affiliation>" for x in a.affiliations)
        + "</author>"
        for a in paper.authors
    )
    extra = ""
    if paper.comment:
        extra += f"<arxiv:comment>{escape(paper.comment)}</arxiv:comment>"
    if paper.journal_ref:
        extra += f"<arxiv:journal_ref>{escape(paper.journal_ref)}</arxiv:journal_ref>"
    if paper.doi:
        extra += f"<arxiv:doi>{escape(paper.doi)}</arxiv:doi>"
    cats = "".join(f'<category term="{c}" scheme="http://arxiv.org/schemas/atom"/>'
                   for c in paper.categories)  # fmt: skip
    return (
        f"<entry><id>http://arxiv.org/abs/{pid}</id><updated>{_stamp(paper.updated)}</updated>"
        f"<published>{_stamp(paper.published)}</published><title>{title}</title>"
        f"<summary>  {escape(paper.abstract)}\n</summary>{authors}{extra}"
        f'<link href="http://arxiv.org/abs/{pid}" rel="alternate" type="text/html"/>'
        f'<link title="pdf" href="http://arxiv.org/pdf/{pid}" rel="related" '
        f'type="application/pdf"/>'
        f'<arxiv:primary_category term="{paper.categories[0]}" '
        f'scheme="http://arxiv.org/schemas/atom"/>{cats}</entry>'
    )
