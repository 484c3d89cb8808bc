"""GET /emerging: the stored emerging phrases of a week, each with its papers.

The page only reads what the leader stored after its polls (bot/catalog/emerging_store.py):
detection reads 12 weeks of papers and never runs per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from aiohttp import web
from sqlalchemy import select
from sqlmodel import col

from bot.catalog.emerging import Emerging, add_command
from bot.catalog.emerging_store import read_emerging
from bot.catalog.momentum import DigestError, digest_as_of, parse_iso_week
from bot.store.models import Paper
from bot.web.common import deps, error_page, page
from bot.web.topic_data import Bar, PaperView, chart_bars, to_view, week_labels


@dataclass(frozen=True, slots=True)
class EmergingView:
    item: Emerging
    papers: tuple[PaperView, ...]
    bars: tuple[Bar, ...]
    command: str


async def show_emerging(request: web.Request) -> web.Response:
    """GET /emerging[?week=2026-W39]: the latest stored week unless one is named."""
    d = deps(request)
    week = request.query.get("week", "").strip() or None
    if week is not None:
        try:
            parse_iso_week(week)
        except DigestError as exc:
            return error_page(400, "No such week", str(exc))
    key = f"{request.path}?week={week or ''}"
    if (cached := d.pages.get(key)) is not None:
        return cached
    async with d.store.read_sessions() as session:
        report = await read_emerging(session=session, week=week)
        ids = sorted({i for e in report.phrases for i in e.papers}) if report else []
        rows = await session.execute(select(Paper).where(col(Paper.id).in_(ids))) if ids else None
        papers = {p.id: to_view(p, ()) for p in rows.scalars()} if rows is not None else {}
    views: list[EmergingView] = []
    first = last = ""
    if report is not None:
        monday = digest_as_of(report.week) - timedelta(days=7)
        for e in report.phrases:
            shown = tuple(papers[i] for i in e.papers if i in papers)
            bars = tuple(chart_bars(list(e.weekly), monday))
            views.append(EmergingView(e, shown, bars, add_command(e)))
        first, last = week_labels(len(report.phrases[0].weekly) if report.phrases else 12, monday)
    response = page("emerging.html", report=report, views=views, first_week=first, last_week=last)
    return d.pages.put(key, response)
