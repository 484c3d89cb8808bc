"""The topic page's questions: `GET /topics/{slug}/ask?q=` (the answer page) and the list
behind `?q=` on a topic page ("N more papers match" links there).

Asking is public, so it is bounded like chat: a question is at most MAX_QUESTION
characters, and model answers count against the visitor's hourly quota (keyed by the
client address); past it the page still answers, from the passages alone, and says so.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from sqlmodel import col, select

from bot.ask.answer import Answer, TopicRef
from bot.ask.question import MAX_QUESTION, QuestionError
from bot.ask.quota import take
from bot.ask.service import CANDIDATES
from bot.catalog.lookup import TopicNotFound, find_topic
from bot.store.models import Paper, Topic
from bot.subscriptions.urls import topic_ask_path, topic_path
from bot.web.common import WebDeps, deps, error_page, page
from bot.web.topic_data import PaperView, to_view

log = logging.getLogger(__name__)

WEB_PLATFORM = "web"


@dataclass
class Matching:
    """The papers of a topic that match a question, best first (or why there are none)."""

    papers: list[PaperView] = field(default_factory=list)
    total: int = 0
    error: str | None = None


def _ref(topic: Topic) -> TopicRef:
    return TopicRef(int(topic.id or 0), topic.slug, topic.name)


async def matching_papers(d: WebDeps, topic: TopicRef, query: str) -> Matching:
    """Up to CANDIDATES papers of `topic` matching `query`, in the answer's order."""
    if d.asker is None:
        return Matching(error="Searching by question is not set up here.")
    try:
        found = await d.asker.search(query[:MAX_QUESTION], topic=topic, limit=CANDIDATES)
    except QuestionError as exc:
        return Matching(error=str(exc))
    ids = [s.paper_id for s in found.ranked]
    async with d.store.read_sessions() as session:
        rows = await session.execute(select(Paper).where(col(Paper.id).in_(ids)))
        by_id = {p.id: p for p in rows.scalars()}
    papers = [to_view(by_id[i], ()) for i in ids if i in by_id]
    return Matching(papers=papers, total=found.total)


async def _model_allowed(request: web.Request, d: WebDeps) -> bool:
    if d.asker is None or d.asker.model is None:
        return False
    async with d.store.sessions() as session, session.begin():
        quota = await take(
            session=session,
            platform=WEB_PLATFORM,
            workspace="",
            user=(request.remote or "unknown")[:320],
            now=d.clock(),
            limit=d.settings.ask_per_user_per_hour,
        )
    return quota.allowed


async def show_answer(request: web.Request) -> web.Response:
    """GET /topics/{slug}/ask?q=…: the answer to a question about one topic."""
    d = deps(request)
    slug = request.match_info["slug"]
    question = " ".join(request.query.get("q", "").split())
    async with d.store.read_sessions() as session:
        try:
            topic = await find_topic(session=session, text=slug)
        except TopicNotFound:
            return error_page(404, "No such topic", f"There is no topic “{slug}”. See /topics.")
    if not question:
        raise web.HTTPFound(topic_path(topic.slug) + "#ask")
    context: dict[str, Any] = {
        "answer": None,
        "notice": None,
        "error": None,
        "topic": topic,
        "question": question[:MAX_QUESTION],
        "page_url": topic_path(topic.slug),
        "ask_url": topic_ask_path(topic.slug),
        "max_question": MAX_QUESTION,
    }
    if d.asker is None:
        context["error"] = "Asking is off here."
        return page("ask.html", status=503, private=True, **context)
    if len(question) > MAX_QUESTION:
        context["error"] = f"Keep the question under {MAX_QUESTION} characters."
        return page("ask.html", status=400, private=True, **context)
    allowed = await _model_allowed(request, d)
    try:
        answer: Answer = await d.asker.ask(question, topic=_ref(topic), use_model=allowed)
    except QuestionError as exc:
        context["error"] = str(exc)
        return page("ask.html", status=400, private=True, **context)
    context["answer"], context["notice"] = answer, answer.notice
    if d.asker.model is not None and not allowed and answer.notice is None:
        per_hour = d.settings.ask_per_user_per_hour
        context["notice"] = f"Model answers are limited to {per_hour} an hour: the best passages."
    return page("ask.html", private=True, **context)
