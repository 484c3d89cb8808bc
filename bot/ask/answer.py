"""An answer's shape, for every medium: the cited papers with their marked passages, the
model's claims when a model answered, and how many more papers match (pure).

`Answer.to_json()` is the `--json` document (`AnswerJSON`); renderers read the dataclasses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, TypedDict

from bot.ask.extract import Passage, best_passages, mark_title
from bot.ask.question import Question
from bot.ask.rank import Scored
from bot.store.records import paper_url
from bot.timeutil import as_utc


class AnswerMode(StrEnum):
    EXTRACTIVE = "extractive"  # passages of the best papers, no model
    MODEL = "model"  # a model's short answer, every claim cited, then the same papers


@dataclass(frozen=True, slots=True)
class TopicRef:
    """The topic a question is about (None for every paper)."""

    id: int
    slug: str
    name: str


@dataclass(frozen=True, slots=True)
class CitedPaper:
    n: int  # its citation number, [n]
    id: str
    title: Passage
    url: str
    published: datetime
    authors: tuple[str, ...]
    passages: tuple[Passage, ...]
    score: float
    abstract: str  # what a model may quote; never shown whole


@dataclass(frozen=True, slots=True)
class Claim:
    """One sentence of a model's answer and the papers it cites (all resolved)."""

    text: str
    citations: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Answer:
    question: str
    topic: TopicRef | None
    terms: tuple[str, ...]
    since: datetime | None
    until: datetime | None
    papers: tuple[CitedPaper, ...]
    total: int  # papers in scope that match the question
    mode: AnswerMode = AnswerMode.EXTRACTIVE
    claims: tuple[Claim, ...] = ()
    more_url: str | None = None
    notice: str | None = None  # why the model's answer is missing or shortened

    @property
    def more(self) -> int:
        return max(0, self.total - len(self.papers))

    def to_json(self) -> AnswerJSON:
        return {
            "question": self.question,
            "topic": self.topic.slug if self.topic else None,
            "terms": list(self.terms),
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
            "mode": str(self.mode),
            "answer": [{"text": c.text, "citations": list(c.citations)} for c in self.claims],
            "papers": [_paper_json(p) for p in self.papers],
            "total": self.total,
            "more": self.more,
            "more_url": self.more_url,
            "notice": self.notice,
        }


class PassageJSON(TypedDict):
    text: str
    highlights: list[list[int]]  # [start, end) character offsets into text


class CitedPaperJSON(TypedDict):
    n: int
    id: str
    title: str
    url: str
    published: str
    authors: list[str]
    score: float
    passages: list[PassageJSON]


class ClaimJSON(TypedDict):
    text: str
    citations: list[int]


class AnswerJSON(TypedDict):
    question: str
    topic: str | None
    terms: list[str]
    since: str | None
    until: str | None
    mode: str
    answer: list[ClaimJSON]
    papers: list[CitedPaperJSON]
    total: int
    more: int
    more_url: str | None
    notice: str | None


def _passage_json(passage: Passage) -> PassageJSON:
    return {"text": passage.text, "highlights": [[s, e] for s, e in passage.marks]}


def _paper_json(paper: CitedPaper) -> CitedPaperJSON:
    return {
        "n": paper.n,
        "id": paper.id,
        "title": paper.title.text,
        "url": paper.url,
        "published": paper.published.isoformat(),
        "authors": list(paper.authors),
        "score": round(paper.score, 4),
        "passages": [_passage_json(p) for p in paper.passages],
    }


def cite_papers(
    ranked: Sequence[Scored],
    rows: Mapping[str, Mapping[str, Any]],
    weights: Mapping[str, float],
) -> tuple[CitedPaper, ...]:
    """The ranked papers numbered from 1, each with its title and best passages marked."""
    stems = frozenset(weights)
    out = []
    for n, scored in enumerate(ranked, start=1):
        row = rows[scored.paper_id]
        names = tuple(str(a.get("name", "")) for a in row.get("authors") or () if a.get("name"))
        out.append(
            CitedPaper(
                n=n,
                id=scored.paper_id,
                title=mark_title(str(row["title"]), stems),
                url=paper_url(scored.paper_id, row.get("links") or {}),
                published=as_utc(row["published"]),
                authors=names,
                passages=tuple(best_passages(str(row.get("abstract", "")), weights)),
                score=scored.score,
                abstract=" ".join(str(row.get("abstract", "")).split()),
            )
        )
    return tuple(out)


def extractive_answer(
    question: Question,
    *,
    topic: TopicRef | None,
    papers: tuple[CitedPaper, ...],
    total: int,
    more_url: str | None,
    notice: str | None = None,
) -> Answer:
    """The answer without a model: the best papers and their passages."""
    return Answer(
        question=question.text,
        topic=topic,
        terms=question.terms,
        since=question.since,
        until=question.until,
        papers=papers,
        total=total,
        more_url=more_url,
        notice=notice,
    )
