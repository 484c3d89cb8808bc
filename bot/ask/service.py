"""`Asker`: the one entry point for questions, used by chat, the web page and the CLI.

read → plan → (model): parse the question; read document frequencies (cached) and the
candidates from the index; rank them (pure); read their rows; build the extractive
answer (pure); then, when a model is configured, ask it with a deadline and fall back
to the extractive answer, saying why, when it is slow, down or answers junk. Sessions
are read-only and closed before the model is called.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import httpx
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.answer import Answer, AnswerMode, TopicRef, cite_papers, extractive_answer
from bot.ask.llm import ModelConfig, ModelError, answer_with_model
from bot.ask.question import Question, parse_question
from bot.ask.rank import Scored, idf, rank_papers
from bot.ask.search import Scope, TermStats, choose_generators, find_candidates
from bot.store.records import PAPER
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

CANDIDATES = 60  # papers the engine hands to the final ranking
PAPERS = 4  # papers an answer cites
_COLUMNS = ("id", "title", "abstract", "authors", "published", "links")
MoreUrl = Callable[[TopicRef | None, str], str | None]


def _no_link(_topic: TopicRef | None, _question: str) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class SearchResult:
    question: Question
    ranked: list[Scored]  # best first
    rows: dict[str, Mapping[str, Any]]  # paper rows of `ranked`
    weights: dict[str, float]  # idf by stem: what extraction and highlighting use
    total: int  # papers in scope the question matches


async def load_rows(session: AsyncSession, ids: list[str]) -> dict[str, Mapping[str, Any]]:
    if not ids:
        return {}
    columns = [PAPER.c[name] for name in _COLUMNS]
    rows = await session.execute(select(*columns).where(PAPER.c.id.in_(ids)))
    return {str(row["id"]): dict(row) for row in rows.mappings()}


class Asker:
    """Answers questions from the store; one per process (it caches term statistics)."""

    def __init__(
        self,
        *,
        sessions: async_sessionmaker[AsyncSession],
        model: ModelConfig | None = None,
        http: httpx.AsyncClient | None = None,
        more_url: MoreUrl = _no_link,
        clock: Callable[[], datetime] = utcnow,
        stats: TermStats | None = None,
    ) -> None:
        self.sessions = sessions
        self.model = model if http is not None else None
        self.http = http
        self.more_url = more_url
        self.clock = clock
        self.stats = stats or TermStats()

    async def search(
        self, text: str, *, topic: TopicRef | None, limit: int = PAPERS
    ) -> SearchResult:
        """The question's best `limit` papers in the topic (or everywhere), best first.

        Raises QuestionError for a question with nothing to search for.
        """
        question = parse_question(text, self.clock())
        scope = Scope(topic.id if topic else None, question.since, question.until)
        async with self.sessions() as session:
            size = await self.stats.size(session)
            dfs = await self.stats.freqs(session, list(question.terms))
            generators, conjunctive = choose_generators(question.terms, dfs)
            found = await find_candidates(
                session,
                generators=generators,
                conjunctive=conjunctive,
                scope=scope,
                limit=max(CANDIDATES, limit),
            )
            rows = await load_rows(session, list(found.ids))
        stem_dfs = {s: dfs.get(t, 0) for s, t in zip(question.stems, question.terms, strict=True)}
        ranked = rank_papers(list(rows.values()), stem_dfs=stem_dfs, size=size, now=self.clock())
        weights = {s: idf(df, size) for s, df in stem_dfs.items() if df > 0}
        shown = ranked[:limit]
        return SearchResult(
            question=question,
            ranked=shown,
            rows={s.paper_id: rows[s.paper_id] for s in shown},
            weights=weights,
            total=max(found.total, len(ranked)),
        )

    async def ask(
        self, text: str, *, topic: TopicRef | None, papers: int = PAPERS, use_model: bool = True
    ) -> Answer:
        """The answer to a question: extractive, or the model's when one is set and usable."""
        found = await self.search(text, topic=topic, limit=papers)
        cited = cite_papers(found.ranked, found.rows, found.weights)
        more = self.more_url(topic, found.question.text) if found.total > len(cited) else None
        answer = extractive_answer(
            found.question, topic=topic, papers=cited, total=found.total, more_url=more
        )
        if not (use_model and cited and self.model is not None and self.http is not None):
            return answer
        try:
            result = await answer_with_model(self.http, self.model, found.question.text, cited)
        except ModelError as exc:
            log.warning("ask.model_fallback", extra={"reason": str(exc)})
            return replace(answer, notice=f"No model answer: {exc}. The best passages instead.")
        notice = None
        if result.dropped:
            s = "" if result.dropped == 1 else "s"
            notice = (
                f"{result.dropped} sentence{s} of the model's answer left out: "
                "no citation of these papers, or not supported by them."
            )
        return replace(answer, mode=AnswerMode.MODEL, claims=result.claims, notice=notice)
