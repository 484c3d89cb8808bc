"""The one paper mapping: record → row → record, and the one paper URL."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ingest.normalize import normalize
from bot.store.columns import json_text
from bot.store.records import PAPER, abs_url, paper_json, paper_url, record_from_row, record_to_row
from bot.types import Author, PaperRecord

OLD_STYLE = PaperRecord(
    id="hep-th/9901001",
    version=3,
    title="Anti de Sitter space and holography",
    abstract="We study $AdS_5$.",
    authors=(Author("Edward Witten", ("IAS",)), Author("Ann Lee")),
    categories=("hep-th", "gr-qc"),
    published=datetime(1999, 1, 1, 12, tzinfo=UTC),
    updated=datetime(1999, 3, 1, 12, tzinfo=UTC),
    source="arxiv",
    doi="10.1000/xyz",
)


async def test_a_record_survives_the_store_exactly(
    sessions: async_sessionmaker[AsyncSession],
) -> None:
    record = normalize(OLD_STYLE)
    async with sessions() as session, session.begin():
        await session.execute(PAPER.insert().values(record_to_row(record, record.updated)))
    async with sessions() as session:
        row = (await session.execute(select(PAPER))).mappings().one()
    assert record_from_row(row) == record
    shown = paper_json(row)
    assert shown["url"] == "https://arxiv.org/abs/hep-th/9901001"
    assert shown["published"] == "1999-01-01T12:00:00+00:00"  # aware UTC, on both stores
    assert shown["authors"][0] == {"name": "Edward Witten", "affiliations": ["IAS"]}


def test_one_url_rule_for_arxiv_doi_and_feed_papers() -> None:
    assert abs_url("2606.01234") == "https://arxiv.org/abs/2606.01234"
    assert paper_url("2606.01234", {}) == "https://arxiv.org/abs/2606.01234"
    assert paper_url("doi:10.1/x", {}) == ""  # no arXiv page for a feed-only paper
    assert paper_url("url:ab12", {"abs": "https://blog.example/p"}) == "https://blog.example/p"


@pytest.mark.parametrize(
    "value",
    [
        [],
        {},
        [{"name": 'Zoë "Q" \\ Çağatan\u2028', "affiliations": ["ETH", "Université Paris"]}],
        {"abs": "https://arxiv.org/abs/2601.00001", "pdf": "http://x/\u00e9"},
        ["cs.LG", "math.OC"],
        "a string",
        [1, 2.5, None, True, {"nested": [[]]}],
    ],
)
def test_json_text_writes_what_json_dumps_writes(value: object) -> None:
    assert json_text(value) == json.dumps(value)


def test_json_text_refuses_what_json_dumps_refuses() -> None:
    with pytest.raises(TypeError):
        json_text([object()])
