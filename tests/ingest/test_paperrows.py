"""Paper rows straight to the driver (SQLite and PostgreSQL): read back exactly as the
ORM mapping wrote them, and only the rows inserted by this call are reported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from bot.ingest.paperrows import insert_new_papers
from bot.store.records import PAPER, record_from_row, record_to_row
from bot.types import Author, PaperRecord

WHEN = datetime(2026, 7, 1, 9, 30, 15, 123456, tzinfo=UTC)


def record(pid: str, **extra: object) -> PaperRecord:
    return PaperRecord(
        id=pid,
        version=2,
        title="Çağatan's $\\mu$P: multi-turn «agents»",
        abstract="An abstract with ünïcode, 'quotes' and \"double quotes\".",
        authors=(Author("Çağatan Öz", ("Boğaziçi University", "MIT")), Author("Yi Wu")),
        categories=("cs.LG", "cs.AI"),
        published=WHEN,
        updated=WHEN + timedelta(days=1),
        source="arxiv",
        comment="12 pages",
        journal_ref="",
        doi=str(extra.get("doi", "")),
        links={"abs": f"https://arxiv.org/abs/{pid}v2"},
    )


async def test_rows_read_back_as_written_and_only_new_ones_are_reported(sessions) -> None:  # type: ignore[no-untyped-def]
    first_now = WHEN + timedelta(hours=1)
    stored = [record("2607.00001", doi="10.1/x"), record("2607.00002")]
    async with sessions() as session, session.begin():
        rows = [record_to_row(r, first_now) for r in stored]
        assert await insert_new_papers(session, rows, first_now) == ["2607.00001", "2607.00002"]
    async with sessions() as session:
        found = (await session.execute(select(PAPER).order_by(PAPER.c.id))).mappings().all()
    assert [record_from_row(row) for row in found] == stored
    assert [row["ingested_at"] for row in found] == [first_now, first_now]
    assert found[1]["doi"] is None  # no DOI is NULL, as the mapping writes it

    # A batch whose rows another writer stored already: only the new one is reported.
    later = first_now + timedelta(minutes=5)
    again = [record("2607.00002"), record("2607.00003")]
    async with sessions() as session, session.begin():
        rows = [record_to_row(r, later) for r in again]
        assert await insert_new_papers(session, rows, later) == ["2607.00003"]
    async with sessions() as session:
        kept = (
            await session.execute(select(PAPER.c.ingested_at).where(PAPER.c.id == "2607.00002"))
        ).scalar_one()
    assert kept == first_now
