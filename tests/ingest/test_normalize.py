"""normalize() on its fast paths and its slow ones; the collector pause restores state."""

from __future__ import annotations

import gc
import unicodedata
from datetime import UTC, datetime

import pytest

from bot.ingest.gcpause import paused_gc
from bot.ingest.persist import normalize
from bot.types import AnnounceType, Author, PaperRecord

WHEN = datetime(2026, 6, 28, 9, tzinfo=UTC)


def _record(authors: tuple[Author, ...], **kw: str) -> PaperRecord:
    return PaperRecord(
        id="2606.01234", version=2, title=kw.get("title", "A title"), abstract="Text.",
        authors=authors, categories=(" cs.LG", "cs.AI", "cs.LG", ""), published=WHEN,
        updated=WHEN, source="arxiv", doi=" 10.1/ABC ", links={"abs": "u"},
        announce_type=AnnounceType.CROSS,
    )  # fmt: skip


def test_clean_authors_are_kept_as_the_same_objects_and_fields_carry_over() -> None:
    authors = (Author("Ayşe Çağatan", ("Boğaziçi University",)), Author("Yi Wu"))
    out = normalize(_record(authors, title="Agents\n  and   Rewards"))
    assert out.authors is authors
    assert out.title == "Agents and Rewards"
    assert out.categories == ("cs.LG", "cs.AI")
    assert out.doi == "10.1/abc"
    assert (out.links, out.announce_type, out.version) == ({"abs": "u"}, AnnounceType.CROSS, 2)


def test_untidy_authors_are_collapsed_composed_and_blank_ones_dropped() -> None:
    decomposed = unicodedata.normalize("NFD", "Çağatan")
    authors = (
        Author(f" Ayşe  {decomposed}", ("  ", "Boğaziçi\n University", "")),
        Author("   ", ("Nowhere",)),
        Author("Yi Wu", ("MIT",)),
    )
    out = normalize(_record(authors))
    assert out.authors == (
        Author("Ayşe Çağatan", ("Boğaziçi University",)),
        Author("Yi Wu", ("MIT",)),
    )
    assert out.authors[1] is authors[2]


@pytest.mark.parametrize("enabled", [True, False])
def test_paused_gc_restores_the_collector_state(enabled: bool) -> None:
    (gc.enable if enabled else gc.disable)()
    try:
        with paused_gc():
            assert not gc.isenabled()
        assert gc.isenabled() is enabled
        with pytest.raises(RuntimeError), paused_gc():
            raise RuntimeError("boom")
        assert gc.isenabled() is enabled
    finally:
        gc.enable()
