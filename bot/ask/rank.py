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
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from bot.ask.terms import stem
from bot.matching.textnorm import fold
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


@lru_cache(maxsize=1 << 16)
def _fold_short(text: str) -> str:
    """`fold` of a name or an affiliation: the same ones recur on many papers."""
    return fold(text)


def _finder(stems: Iterable[str]) -> re.Pattern[str]:
    """Words that may stem to one of `stems`: Snowball keeps a stem's letters but the
    last (`happy` -> `happi`), so a word must start with all of a stem but its last."""
    prefixes = sorted({st[:-1] if len(st) > 3 else st for st in stems}, key=len, reverse=True)
    alternatives = "|".join(re.escape(p) for p in prefixes) or "(?!)"
    return re.compile(rf"\b(?:{alternatives})\w*")


def field_counts(
    paper: Mapping[str, Any], finder: re.Pattern[str], stems: frozenset[str]
) -> dict[str, tuple[dict[str, int], int]]:
    """Per field of a stored paper: how often each of `stems` occurs, and its length in
    words. Only words `finder` picks out are stemmed: ranking a hundred papers stays cheap."""
    names: list[str] = []
    places: list[str] = []
    for author in paper.get("authors") or ():
        names.append(_fold_short(str(author.get("name", ""))))
        places.extend(_fold_short(str(p)) for p in author.get("affiliations") or ())
    texts = {
        "title": fold(str(paper.get("title", ""))),
        "abstract": fold(str(paper.get("abstract", ""))),
        "authors": " ".join(names),
        "affiliations": " ".join(dict.fromkeys(places)),
    }
    out = {}
    for name, folded in texts.items():
        counts: dict[str, int] = {}
        for word in finder.findall(folded):
            key = stem(word)
            if key in stems:
                counts[key] = counts.get(key, 0) + 1
        out[name] = (counts, len(folded.split()))  # whitespace words: close enough for b
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
    finder, wanted = _finder(weights), frozenset(weights)
    scored = []
    for paper in papers:
        relevance, matched = score_paper(field_counts(paper, finder, wanted), weights)
        if relevance <= 0:
            continue
        score = relevance * recency(paper["published"], now)
        scored.append(Scored(str(paper["id"]), score, relevance, matched))
    by_id = {str(p["id"]): p for p in papers}
    newest = {pid: -as_utc(p["published"]).timestamp() for pid, p in by_id.items()}
    scored.sort(key=lambda s: (-s.score, newest[s.paper_id], s.paper_id))
    return scored
