"""Poll one source: fetch batches, ingest each with its state in one transaction.

A batch and the cursor/ETag/facts that come with it are committed together, so a cursor
never moves past papers that were not stored. Bad entries are logged, counted and
skipped; a source that fails is recorded in its state (error count, last error) and the
poll goes on with the next source. Only a poll that could read nothing fails.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import col

from bot.config import Settings
from bot.errors import PapertideError
from bot.ingest.http import HttpDeps, build_http
from bot.ingest.persist import IngestReport, ingest_batch
from bot.ingest.sources.arxiv_api import ArxivApiSource
from bot.ingest.sources.base import Batch, Source, SourceContext
from bot.ingest.sources.registry import check_source_name, create_source
from bot.ingest.state import finish_poll, load_state, save_batch_state, save_failure, start_poll
from bot.matching.trial import load_engine
from bot.store.models import Topic
from bot.timeutil import utcnow
from bot.types import Match, PaperMatcher

log = logging.getLogger(__name__)

OnNewMatches = Callable[[AsyncSession, list[Match]], Awaitable[None]]
OnProgress = Callable[[int, int], None]


@dataclass
class PollResult:
    """What one poll of one source did."""

    source: str
    batches: int = 0
    read: int = 0
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    ignored: int = 0
    skipped: int = 0
    new_matches: int = 0
    error: str | None = None

    @property
    def read_anything(self) -> bool:
        return self.batches > 0


async def poll_categories(*, session: AsyncSession, settings: Settings) -> tuple[str, ...]:
    """PAPERTIDE_ARXIV_CATEGORIES, else the union of the active topics' categories."""
    if settings.arxiv_categories:
        return tuple(sorted(set(settings.arxiv_categories)))
    query = select(col(Topic.categories)).where(col(Topic.active).is_(True))
    rows = await session.execute(query)
    return tuple(sorted({c for (cats,) in rows for c in cats}))


async def run_poll(
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    source_name: str,
    http: HttpDeps | None = None,
    matcher: PaperMatcher | None = None,
    on_new_matches: OnNewMatches | None = None,
    source: Source | None = None,
    on_progress: OnProgress | None = None,
) -> PollResult:
    """Poll `source_name` once; never raises for a source's failure (see `.error`)."""
    result = PollResult(source=source_name)
    try:
        check_source_name(source_name)
    except PapertideError as exc:
        result.error = str(exc)  # no state to record: the name cannot key one
        log.error("poll.failed", extra={"source": source_name[:80], "error": result.error})
        return result
    own_http = http is None
    http = http or build_http(settings)
    started = utcnow()
    try:
        async with sessions() as session, session.begin():
            await start_poll(session=session, name=source_name, started=started)
        async with sessions() as session:
            state = await load_state(session=session, name=source_name)
            categories = await poll_categories(session=session, settings=settings)
            matcher = matcher or await load_engine(session=session)
        source = source or create_source(
            source_name, SourceContext(settings=settings, http=http, categories=categories)
        )
        async for batch in source.fetch(state):
            async with sessions() as session, session.begin():
                report = await ingest_batch(session=session, records=batch.papers, matcher=matcher)
                if on_new_matches is not None and report.new_matches:
                    await on_new_matches(session, report.new_matches)
                await save_batch_state(
                    session=session, name=source_name, batch=batch, started=started
                )
            _count(result, batch, report)
            if on_progress is not None and batch.progress is not None:
                on_progress(*batch.progress)
        async with sessions() as session, session.begin():
            await finish_poll(session=session, name=source_name)
    except Exception as exc:
        # Whatever one source does, the poll records it and goes on with the next source.
        result.error = _one_line(exc)
        if isinstance(exc, PapertideError):
            log.error("poll.failed", extra={"source": source_name, "error": result.error})
        else:
            log.exception("poll.crashed", extra={"source": source_name, "error": result.error})
        async with sessions() as session, session.begin():
            await save_failure(
                session=session, name=source_name, error=result.error, started=started
            )
    finally:
        if own_http:
            await http.client.aclose()
    log.info("poll.done", extra={"source": source_name, "new": result.new, "read": result.read})
    return result


def _one_line(exc: BaseException) -> str:
    """An error as one line: PapertideErrors say it themselves; others get their type."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if not isinstance(exc, PapertideError):
        text = f"internal error {type(exc).__name__}" + (f": {text}" if text else "")
    return text[:500]


def _count(result: PollResult, batch: Batch, report: IngestReport) -> None:
    result.batches += 1
    result.read += len(batch.papers)
    result.new += len(report.new)
    result.updated += len(report.updated)
    result.unchanged += report.unchanged
    result.ignored += report.ignored
    result.new_matches += len(report.new_matches)
    result.skipped += sum(skip.count for skip in batch.skipped) + len(report.rejected)
    for skip in batch.skipped:
        log.warning(
            "poll.skipped",
            extra={"source": result.source, "where": skip.where, "reason": skip.reason},
        )
    for reason in report.rejected:
        log.warning("poll.rejected", extra={"source": result.source, "reason": reason})


async def run_backfill(
    *,
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    weeks: int,
    source_name: str = "arxiv",
    http: HttpDeps | None = None,
    matcher: PaperMatcher | None = None,
    on_new_matches: OnNewMatches | None = None,
    on_progress: OnProgress | None = None,
    now: datetime | None = None,
) -> PollResult:
    """Fetch `weeks` of history (for momentum); the arXiv API is split into date windows."""
    own_http = http is None
    http = http or build_http(settings)
    source: Source | None = None
    try:
        if source_name == "arxiv":
            async with sessions() as session:
                categories = await poll_categories(session=session, settings=settings)
            ctx = SourceContext(settings=settings, http=http, categories=categories)
            since = (now or utcnow()) - timedelta(weeks=weeks)
            source = ArxivApiSource(source_name, ctx, since=since, now=now)
        return await run_poll(
            settings=settings,
            sessions=sessions,
            source_name=source_name,
            http=http,
            matcher=matcher,
            on_new_matches=on_new_matches,
            source=source,
            on_progress=on_progress,
        )
    finally:
        if own_http:
            await http.client.aclose()
