"""The final ranking, shared by both engines (pure): BM25F over a question's terms, with
a mild preference for recent papers.

The engines pick candidates with their own ranking (search.py); this module scores
those candidates the same way whatever the store, so SQLite and PostgreSQL agree on the
order. Per field f (title, abstract, authors, affiliations), a term's frequency is
length-normalised, tf_f / (1 - b_f + b_f * len_f / avglen_f), weighted and summed; the
score is sum over terms of idf(t) * tf / (K1 + tf), with idf(t) = ln(1 + (N - df + 0.5) /
(df + 0.5)) from the engine's document frequencies, times a coordination factor,
(1 + coverage) / 2, where coverage is the idf-weighted share of the question's terms the
paper contains: a paper with every asked word beats one that repeats some of them.
A paper published today gets
RECENCY_BOOST more, halving every RECENCY_HALF_LIFE_DAYS: relevance decides, age breaks
near-ties.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.ask.terms import stem
from bot.matching.textnorm import fold, split_words
from bot.timeutil import as_utc

K1 = 1.2
FIELDS = ("title", "abstract", "authors", "affiliations")
FIELD_WEIGHT = {"title": 2.5, "abstract": 1.0, "authors": 2.0, "affiliations": 0.75}
FIELD_B = {"title": 0.5, "abstract": 0.75, "authors": 0.3, "affiliations": 0.3}
# Typical field lengths in words of an arXiv record: fixed, so a score never depends on
# which other papers happen to be candidates.
AVG_LEN = {"title": 11.0, "abstract": 170.0, "authors": 12.0, "affiliations": 10.0}
RECENCY_BOOST = 0.2
RECENCY_HALF_LIFE_DAYS = 90.0


@dataclass(frozen=True, slots=True)
class Scored:
    paper_id: str
    score: float
    relevance: float  # BM25F alone, before the recency factor
    matched: tuple[str, ...]  # the question's stems this paper contains


def idf(df: int, size: int) -> float:
    return math.log(1.0 + (size - df + 0.5) / (df + 0.5))


def field_counts(paper: Mapping[str, Any]) -> dict[str, tuple[dict[str, int], int]]:
    """Per field of a stored paper: its stems with their counts, and its length in words."""
    names: list[str] = []
    places: list[str] = []
    for author in paper.get("authors") or ():
        names.append(str(author.get("name", "")))
        places.extend(str(p) for p in author.get("affiliations") or ())
    texts = {
        "title": str(paper.get("title", "")),
        "abstract": str(paper.get("abstract", "")),
        "authors": " ".join(names),
        "affiliations": " ".join(dict.fromkeys(places)),
    }
    out = {}
    for name, text in texts.items():
        words = Counter(split_words(fold(text)))  # counted in C; each distinct word stemmed once
        stems: dict[str, int] = {}
        for word, n in words.items():
            key = stem(word)
            stems[key] = stems.get(key, 0) + n
        out[name] = (stems, sum(words.values()))
    return out


def recency(published: datetime, now: datetime) -> float:
    """1 + RECENCY_BOOST for a paper from today, halving toward 1 with age."""
    age_days = max(0.0, (now - as_utc(published)).total_seconds() / 86400)
    return 1.0 + RECENCY_BOOST * float(0.5 ** (age_days / RECENCY_HALF_LIFE_DAYS))


def score_paper(
    fields: Mapping[str, tuple[dict[str, int], int]], weights: Mapping[str, float]
) -> tuple[float, tuple[str, ...]]:
    """(BM25F score, matched stems) of one paper's `field_counts`; `weights` are idf."""
    total, matched = 0.0, []
    for term, weight in weights.items():
        tf = 0.0
        for f in FIELDS:
            counts, length = fields.get(f, ({}, 0))
            n = counts.get(term, 0)
            if n:
                norm = 1 - FIELD_B[f] + FIELD_B[f] * length / AVG_LEN[f]
                tf += FIELD_WEIGHT[f] * n / norm
        if tf:
            matched.append(term)
            total += weight * tf / (K1 + tf)
    asked = sum(weights.values())
    coverage = sum(weights[t] for t in matched) / asked if asked else 0.0
    return total * (1 + coverage) / 2, tuple(matched)


def rank_papers(
    papers: Sequence[Mapping[str, Any]],
    *,
    stem_dfs: Mapping[str, int],
    size: int,
    now: datetime,
) -> list[Scored]:
    """Candidates best first; papers that contain none of the terms are left out."""
    weights = {s: idf(df, size) for s, df in stem_dfs.items() if df > 0}
    scored = []
    for paper in papers:
        relevance, matched = score_paper(field_counts(paper), weights)
        if relevance <= 0:
            continue
        score = relevance * recency(paper["published"], now)
        scored.append(Scored(str(paper["id"]), score, relevance, matched))
    by_id = {str(p["id"]): p for p in papers}
    newest = {pid: -as_utc(p["published"]).timestamp() for pid, p in by_id.items()}
    scored.sort(key=lambda s: (-s.score, newest[s.paper_id], s.paper_id))
    return scored
