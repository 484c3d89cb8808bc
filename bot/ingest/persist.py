"""Ingest: normalize, deduplicate and persist papers, and record their matches.

One call per batch (`ingest_batch`): bulk reads of what is known, bulk INSERT … ON
CONFLICT on SQLite and PostgreSQL alike, then the matcher runs once per new or changed
paper and its topic and alert matches are inserted if absent. The report lists what is
new and changed and exactly the matches inserted now (what the outbox fan-out sends).
New and changed papers are queued for the full-text index in the same transaction; the
indexer (bot/ask/index.py) indexes them after the commit, off ingest's path.
Running the same batch twice stores nothing twice and reports no new match.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot import collector
from bot.ask.index import queue_papers
from bot.ingest.normalize import BadRecord, normalize
from bot.ingest.paperrows import insert_new_papers
from bot.matching.matches import record_matches
from bot.store.columns import json_text
from bot.store.records import PAPER, record_from_row, record_to_row
from bot.timeutil import utcnow
from bot.types import AnnounceType, Author, Match, PaperMatcher, PaperRecord

log = logging.getLogger(__name__)

_CHUNK = 500  # ids per IN (...) list
# Announcements about a paper arXiv announced before: never a new paper by themselves.
_REPLACES = (AnnounceType.REPLACE, AnnounceType.REPLACE_CROSS, AnnounceType.ABSONLY)
_CROSSES = (AnnounceType.CROSS, AnnounceType.REPLACE_CROSS)


@dataclass
class IngestReport:
    """What one or more batches changed in the store."""

    new: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: int = 0
    ignored: int = 0  # replacements of papers we never stored
    new_matches: list[Match] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # why records could not be stored

    def add(self, other: IngestReport) -> None:
        self.new += other.new
        self.updated += other.updated
        self.unchanged += other.unchanged
        self.ignored += other.ignored
        self.new_matches += other.new_matches
        self.rejected += other.rejected


def merge(old: PaperRecord, new: PaperRecord) -> PaperRecord:
    """Two sightings of one paper as one: the later version's text, all categories."""
    newer, other = (new, old) if new.version >= old.version else (old, new)
    cats = tuple(dict.fromkeys(newer.categories + other.categories))
    kind = newer.announce_type if newer.announce_type == other.announce_type else AnnounceType.NEW
    return replace(
        newer,
        categories=cats,
        published=min(old.published, new.published),
        doi=newer.doi or other.doi,
        announce_type=kind,
    )


async def ingest_batch(
    *,
    session: AsyncSession,
    records: Sequence[PaperRecord],
    matcher: PaperMatcher,
    now: datetime | None = None,
) -> IngestReport:
    """Persist one batch (caller commits); returns what is new, changed and newly matched."""
    now = now or utcnow()
    report = IngestReport()
    # The pure steps run with the collector paused (see bot/collector.py).
    with collector.paused():
        normalized = _normalize_all(records, report)
    batch: dict[str, PaperRecord] = {}
    for record in await _alias_dois(session, normalized):
        seen = batch.get(record.id)
        batch[record.id] = merge(seen, record) if seen else record
    known = await _load_known(session, list(batch))
    with collector.paused():
        inserts, updates, to_match = _plan(batch, known, now, report)
    inserted = await insert_new_papers(session, inserts, now)
    report.new += inserted
    report.unchanged += len(inserts) - len(inserted)  # another process stored them first
    if updates:
        await session.execute(_UPDATE, updates)
    # The full-text index catches up after the commit (bot/ask/index.py): only the ids here.
    await queue_papers(session, [*inserted, *report.updated], now)
    to_match += [batch[pid] for pid in inserted]
    report.new_matches = await _store_matches(session, to_match, matcher, now)
    return report


def _normalize_all(records: Sequence[PaperRecord], report: IngestReport) -> list[PaperRecord]:
    # One record that cannot be stored is reported and left out; the batch goes on.
    out: list[PaperRecord] = []
    for record in records:
        try:
            out.append(normalize(record))
        except BadRecord as exc:
            report.rejected.append(str(exc))
    return out


def _plan(
    batch: dict[str, PaperRecord],
    known: dict[str, PaperRecord],
    now: datetime,
    report: IngestReport,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[PaperRecord]]:
    """Rows to insert, rows to update and changed papers to match; counts the rest."""
    inserts: list[dict[str, Any]] = []
    updates: list[dict[str, Any]] = []
    to_match: list[PaperRecord] = []
    for paper_id, record in batch.items():
        row = known.get(paper_id)
        if row is None:
            if record.announce_type in _REPLACES:
                report.ignored += 1  # a replacement is never a new paper
                continue
            inserts.append(record_to_row(record, now))
            continue
        final = _apply(row, record)
        if final is None:
            report.unchanged += 1
            continue
        row_now = record_to_row(final, now)
        updates.append({"b_id": paper_id} | {f"v_{c}": row_now[c] for c in _UPDATED_COLUMNS})
        report.updated.append(paper_id)
        to_match.append(final)
    return inserts, updates, to_match


async def _alias_dois(session: AsyncSession, records: list[PaperRecord]) -> list[PaperRecord]:
    # A feed paper known only by DOI becomes the arXiv paper that carries that DOI.
    dois = {r.id.removeprefix("doi:") for r in records if r.id.startswith("doi:")}
    if not dois:
        return records
    alias = {r.doi: r.id for r in records if r.doi and not r.id.startswith(("doi:", "url:"))}
    for chunk in _chunks(sorted(dois)):
        rows = await session.execute(select(PAPER.c.doi, PAPER.c.id).where(PAPER.c.doi.in_(chunk)))
        alias |= {doi: pid for doi, pid in rows if not pid.startswith("doi:")}
    out = []
    for record in records:
        target = alias.get(record.id.removeprefix("doi:")) if record.id.startswith("doi:") else None
        out.append(replace(record, id=target) if target else record)
    return out


# Which of a batch's ids are stored, in one statement with one parameter: a poll's batch
# is mostly new papers, and 500 bound parameters per IN list cost more than the lookup.
_PG_STORED = "SELECT id FROM paper WHERE id = ANY(%b::varchar[])"
_SQLITE_STORED = "SELECT id FROM paper WHERE id IN (SELECT value FROM json_each(?))"


async def _load_known(session: AsyncSession, ids: list[str]) -> dict[str, PaperRecord]:
    known: dict[str, PaperRecord] = {}
    if not ids:
        return known
    conn = await session.connection()
    if conn.dialect.name == "postgresql":
        stored = await conn.exec_driver_sql(_PG_STORED, (ids,))
    else:
        stored = await conn.exec_driver_sql(_SQLITE_STORED, (json_text(ids),))
    for chunk in _chunks([pid for (pid,) in stored]):
        rows = await session.execute(select(PAPER).where(PAPER.c.id.in_(chunk)))
        for row in rows.mappings():
            known[row["id"]] = record_from_row(row)
    return known


def _apply(row: PaperRecord, record: PaperRecord) -> PaperRecord | None:
    """The stored paper after `record`, or None when nothing changes."""
    cats = tuple(dict.fromkeys(row.categories + record.categories))
    if record.announce_type == AnnounceType.CROSS:
        # A cross-list of a known paper only adds its category.
        return replace(row, categories=cats) if cats != row.categories else None
    if record.authoritative and record.version >= row.version:
        final = _repair(row, record)
    elif record.version > row.version and record.announce_type in _REPLACES:
        # A feed's replacement: the new version's text and authors; the API repairs the rest.
        final = replace(
            row,
            version=record.version,
            title=record.title,
            abstract=record.abstract or row.abstract,
            authors=_keep_affiliations(record.authors, row.authors),
            categories=cats,
            doi=record.doi or row.doi,
            journal_ref=record.journal_ref or row.journal_ref,
            updated=max(row.updated, record.updated),
        )
    elif record.version > row.version:
        final = replace(_plain(record), published=min(row.published, record.published))
        final = replace(final, categories=tuple(dict.fromkeys(final.categories + row.categories)))
    elif record.announce_type == AnnounceType.ABSONLY:
        # New metadata for the same version: arXiv changed the abstract page.
        final = replace(
            row,
            title=record.title or row.title,
            abstract=record.abstract or row.abstract,
            categories=cats,
            doi=record.doi or row.doi,
            journal_ref=record.journal_ref or row.journal_ref,
        )
    else:
        final = replace(
            row,
            categories=cats,
            doi=row.doi or record.doi,
            comment=row.comment or record.comment,
            journal_ref=row.journal_ref or record.journal_ref,
            # The API's first-version date beats a feed's announcement date.
            published=record.published if record.authoritative else row.published,
        )
    return None if final == row else final


def _repair(row: PaperRecord, record: PaperRecord) -> PaperRecord:
    """The API's record of a version we hold: it wins for every field it carries.

    A feed stored the paper first from its announcement (names parsed from one line, the
    announcement as its date); the API has each author's affiliations, the DOI, the
    journal reference and the first version's submission date. Matches already recorded
    stay recorded, so a repair never alerts twice.
    """
    return replace(
        _plain(record),
        categories=tuple(dict.fromkeys(record.categories + row.categories)),
        doi=record.doi or row.doi,
        journal_ref=record.journal_ref or row.journal_ref,
        comment=record.comment or row.comment,
        abstract=record.abstract or row.abstract,
        links={**row.links, **record.links},
    )


def _keep_affiliations(new: tuple[Author, ...], old: tuple[Author, ...]) -> tuple[Author, ...]:
    """A feed's author list, each author keeping the affiliations we knew when it has none."""
    if not new:
        return old
    known = {a.name: a.affiliations for a in old if a.affiliations}
    return tuple(
        a if a.affiliations or a.name not in known else Author(a.name, known[a.name]) for a in new
    )


def _plain(record: PaperRecord) -> PaperRecord:
    # What a stored row reads back as, so "unchanged" compares like with like.
    if record.announce_type is AnnounceType.NEW and not record.authoritative:
        return record
    return replace(record, announce_type=AnnounceType.NEW, authoritative=False)


_UPDATED_COLUMNS = (
    "version", "title", "abstract", "authors", "categories", "primary_category", "comment",
    "journal_ref", "doi", "links", "published", "updated", "source",
)  # fmt: skip
# Bind names differ from column names: SQLAlchemy reserves those for its own SET clause.
_UPDATE = (
    update(PAPER)
    .where(PAPER.c.id == bindparam("b_id"))
    .values({c: bindparam(f"v_{c}") for c in _UPDATED_COLUMNS})
)


async def _store_matches(
    session: AsyncSession, papers: list[PaperRecord], matcher: PaperMatcher, now: datetime
) -> list[Match]:
    # Matching is CPU work that grows with the batch, its author lists and the number of
    # queries: a worker thread does it, so the event loop (which must answer Slack
    # within 3 s) keeps running. Nothing else touches `papers` or `matcher` meanwhile.
    found = await asyncio.to_thread(_match_all, matcher, papers) if papers else []
    return await record_matches(session=session, matches=found, now=now)


def _match_all(matcher: PaperMatcher, papers: list[PaperRecord]) -> list[Match]:
    with collector.paused():
        return [match for paper in papers for match in matcher.match(paper)]


def _chunks(items: Sequence[str], size: int = _CHUNK) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
