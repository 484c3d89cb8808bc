"""The ingest benchmark's generated corpus reads back through the real arXiv parser.

bench/ingest.py times papertide on these pages; if the parser skipped or changed entries
the figures would measure the wrong thing, so every field must come back as generated.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from bot.ingest.sources.arxiv_atom import parse_page
from tests.support.atom_corpus import atom_entry, feed_page, generate_records

END = datetime(2026, 7, 1, tzinfo=UTC)


def test_generated_pages_parse_back_to_the_generated_papers() -> None:
    records = generate_records(random.Random(3), 400, end=END, span=timedelta(days=10))
    page = parse_page(
        feed_page([atom_entry(r) for r in records], total=len(records), start=0),
        source="arxiv",
        url="bench",
    )

    assert page.skipped == []
    assert [p.id for p in page.papers] == [r.id for r in records]
    for parsed, made in zip(page.papers, records, strict=True):
        assert parsed.version == made.version
        assert [a.name for a in parsed.authors] == [a.name for a in made.authors]
        assert [a.affiliations for a in parsed.authors] == [a.affiliations for a in made.authors]
        assert parsed.categories == made.categories
        assert parsed.doi == made.doi
        assert parsed.published == made.published
        assert " ".join(parsed.title.split()) == " ".join(made.title.split())
        assert parsed.abstract.strip() == made.abstract
    # What makes it realistic: long collaboration lists and names in several scripts.
    assert max(len(r.authors) for r in records) >= 50
    assert any(not a.name.isascii() for r in records for a in r.authors)
    assert any(a.name == "Иван Петров" for r in records for a in r.authors)
