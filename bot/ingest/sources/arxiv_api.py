"""The arXiv API source (`arxiv`): category-group queries, paged, windowed, overlapping.

One query per group of categories (`cat:cs.LG OR cat:cs.AI …`), sorted by submission
date ascending so the stored cursor can follow the pages. Pages hold at most 2,000
results and a query never reaches past arXiv's 30,000-result cap: a window that
reports more is halved until it fits. Each poll starts a few days before the stored
cursor because papers reach the API a day or more after their submission date; the
idempotent ingest absorbs the overlap.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Sequence
from datetime import datetime, timedelta

from bot.errors import SourceError
from bot.ingest.dates import DateParseError, parse_date
from bot.ingest.http import HttpStatusError, fetch
from bot.ingest.sources.arxiv_atom import Page, PageError, api_error_text, parse_page
from bot.ingest.sources.base import Batch, SourceContext, StoredState
from bot.timeutil import utcnow

log = logging.getLogger(__name__)

PAGE_SIZE = 2_000
RESULT_CAP = 30_000
GROUP_SIZE = 8  # categories per query: few requests, queries well under URL limits
OVERLAP = timedelta(days=3)
EMPTY_PAGE_RETRIES = 3
DEFAULT_CATEGORIES = ("cs.LG", "cs.AI")


def group_categories(categories: Sequence[str], size: int = GROUP_SIZE) -> list[tuple[str, ...]]:
    """Sorted, deduplicated categories in groups of `size` (one query each)."""
    unique = sorted(set(categories)) or list(DEFAULT_CATEGORIES)
    return [tuple(unique[i : i + size]) for i in range(0, len(unique), size)]


def _stamp(when: datetime) -> str:
    return when.strftime("%Y%m%d%H%M")


class ArxivApiSource:
    """Streams pages of the arXiv API as batches; `since` forces a backfill start."""

    def __init__(
        self,
        name: str,
        ctx: SourceContext,
        *,
        since: datetime | None = None,
        page_size: int = PAGE_SIZE,
        result_cap: int = RESULT_CAP,
        now: datetime | None = None,
    ) -> None:
        self.name = name
        self._ctx = ctx
        self._since = since
        self._page_size = min(page_size, PAGE_SIZE)
        self._cap = min(result_cap, RESULT_CAP)
        self._now = now

    async def fetch(self, state: StoredState) -> AsyncIterator[Batch]:
        now = self._now or utcnow()
        cursors: dict[str, str] = dict(state.data.get("cursors", {}))
        lookback = timedelta(days=self._ctx.settings.arxiv_lookback_days)
        for group in group_categories(self._ctx.categories):
            key = " ".join(group)
            start = self._since or self._resume_at(cursors.get(key), now - lookback)
            async for batch in self._fetch_group(group, key, start, now, cursors):
                yield batch

    @staticmethod
    def _resume_at(cursor: str | None, default: datetime) -> datetime:
        if not cursor:
            return default
        try:
            return parse_date(cursor) - OVERLAP
        except DateParseError:
            return default

    async def _fetch_group(
        self,
        group: tuple[str, ...],
        key: str,
        start: datetime,
        end: datetime,
        cursors: dict[str, str],
    ) -> AsyncIterator[Batch]:
        done = 0
        lo = start
        while lo < end:
            hi, first = await self._fit_window(group, lo, end)
            total = first.total
            offset = 0
            page: Page | None = first
            while True:
                assert page is not None
                offset += len(page.papers) + len(page.skipped)
                newest = max((p.published for p in page.papers), default=None)
                finished = offset >= total
                mark = hi if finished else (newest or lo)
                _advance(cursors, key, mark)
                done += len(page.papers)
                yield Batch(
                    papers=page.papers,
                    cursor=min(cursors.values()),
                    data={"cursors": dict(cursors)},
                    skipped=page.skipped,
                    progress=(done, done + max(0, total - offset)),
                )
                if finished:
                    break
                page = await self._nonempty_page(group, lo, hi, offset, total)
            lo = hi

    async def _fit_window(
        self, group: tuple[str, ...], lo: datetime, hi: datetime
    ) -> tuple[datetime, Page]:
        """Shrink [lo, hi] until arXiv reports at most `result_cap` results in it."""
        while True:
            page = await self._page(group, lo, hi, 0)
            if page.total <= self._cap or hi - lo <= timedelta(hours=1):
                return hi, page
            hi = lo + (hi - lo) / 2
            log.info("arxiv.window_split", extra={"from": lo.isoformat(), "to": hi.isoformat()})

    async def _nonempty_page(
        self, group: tuple[str, ...], lo: datetime, hi: datetime, offset: int, total: int
    ) -> Page:
        # arXiv sometimes serves an empty page mid-result; it is not the end.
        for attempt in range(1, EMPTY_PAGE_RETRIES + 1):
            page = await self._page(group, lo, hi, offset)
            if page.papers or page.skipped:
                return page
            log.warning("arxiv.empty_page", extra={"start": offset, "total": total})
            await asyncio.sleep(self._ctx.settings.arxiv_delay_seconds * attempt)
        raise SourceError(
            self.name,
            f"empty page at start={offset} while totalResults={total}",
            url=self._ctx.settings.arxiv_api_url,
        )

    async def _page(self, group: tuple[str, ...], lo: datetime, hi: datetime, offset: int) -> Page:
        cats = " OR ".join(f"cat:{c}" for c in group)
        params = {
            "search_query": f"({cats}) AND submittedDate:[{_stamp(lo)} TO {_stamp(hi)}]",
            "start": str(offset),
            "max_results": str(self._page_size),
            "sortBy": "submittedDate",
            "sortOrder": "ascending",
        }
        url = self._ctx.settings.arxiv_api_url
        try:
            response = await fetch(
                self._ctx.http,
                url,
                source=self.name,
                params=params,
                limiter=self._ctx.http.arxiv_limiter,
            )
        except HttpStatusError as exc:
            # arXiv answers a query it refuses with HTTP 400 and an entry saying why.
            why = api_error_text(exc.body)
            if why is None:
                raise
            raise SourceError(self.name, f"HTTP {exc.status}: {why}", url=exc.url) from exc
        try:
            return parse_page(response.content, source=self.name, url=response.url)
        except PageError as exc:
            raise SourceError(self.name, str(exc), url=response.url) from exc


def _advance(cursors: dict[str, str], key: str, mark: datetime) -> None:
    # A backfill never moves a cursor backwards.
    current = cursors.get(key)
    if current is None or parse_date(current) < mark:
        cursors[key] = mark.isoformat()


def create(name: str, ctx: SourceContext) -> ArxivApiSource:
    return ArxivApiSource(name, ctx)
