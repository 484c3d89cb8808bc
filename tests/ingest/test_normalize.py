"""normalize() on its fast paths and its slow ones; the collector pause restores state.

And what a feed may not put in the store: invisible and control characters, unbounded
author lists and names, links that are not http(s), fields longer than their columns.
"""

from __future__ import annotations

import unicodedata
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from bot.ingest.normalize import MAX_AUTHORS, MAX_NAME_CHARS, BadRecord, normalize
from bot.types import AnnounceType, Author, PaperRecord

WHEN = datetime(2026, 6, 28, 9, tzinfo=UTC)


def _record(authors: tuple[Author, ...], **kw: str) -> PaperRecord:
    return PaperRecord(
        id="2606.01234", version=2, title=kw.get("title", "A title"), abstract="Text.",
        authors=authors, categories=(" cs.LG", "cs.AI", "cs.LG", ""), published=WHEN,
        updated=WHEN, source="arxiv", doi=" 10.1/ABC ", links={"abs": "https://example.org/p"},
        announce_type=AnnounceType.CROSS,
    )  # fmt: skip


def test_clean_authors_are_kept_as_the_same_objects_and_fields_carry_over() -> None:
    authors = (Author("Ayşe Çağatan", ("Boğaziçi University",)), Author("Yi Wu"))
    out = normalize(_record(authors, title="Agents\n  and   Rewards"))
    assert out.authors is authors
    assert out.title == "Agents and Rewards"
    assert out.categories == ("cs.LG", "cs.AI")
    assert out.doi == "10.1/abc"
    assert (out.links, out.announce_type, out.version) == (
        {"abs": "https://example.org/p"},
        AnnounceType.CROSS,
        2,
    )


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


def test_invisible_and_control_characters_leave_feed_text() -> None:
    sneaky = "Safe\u202e txet\u202c \u200bRein\u00adforcement\ufeff \x85learning\x9b\x07 \ud800!"
    record = _record((Author("Ann\u2066 Lee\u2069", ("M\u200dIT\x1b",)),), title=sneaky)
    out = normalize(record)
    assert out.title == "Safe txet Reinforcement learning \ufffd!"
    assert out.authors == (Author("Ann Lee", ("MIT",)),)


def test_author_lists_and_names_are_bounded() -> None:
    huge_name = " ".join(["word"] * 24_000)
    many = tuple(Author(f"Author {i}") for i in range(5000))
    out = normalize(_record((Author(huge_name), *many)))
    assert len(out.authors) == MAX_AUTHORS
    assert len(out.authors[0].name) <= MAX_NAME_CHARS
    assert out.authors[0].name.endswith("word…")
    assert out.authors[1] is many[0]
    crowded = Author("Ann Lee", (*(f"Lab {i}" for i in range(50)), "x" * 1000))
    (kept,) = normalize(_record((crowded,))).authors
    assert len(kept.affiliations) == 10


@pytest.mark.parametrize(
    ("link", "kept"),
    [
        ("https://arxiv.org/abs/2606.01234", True),
        ("http://journal.example.org/a?b=1", True),
        ("javascript:alert(document.cookie)", False),
        ("  JavaScript:alert(1)", False),
        ("data:text/html,<script>alert(1)</script>", False),
        ("vbscript:msgbox(1)", False),
        ("https:///no-host", False),
        ("https://?q=no-host", False),
        ("http://[::1", False),
        ("http://[::1]/ok", True),
        ("//evil.example.org/x", False),
        ("https://example.org/\u202eevil", False),
    ],
)
def test_only_http_links_are_kept(link: str, kept: bool) -> None:
    record = replace(_record(()), links={"abs": link, "pdf": link})
    assert normalize(record).links == ({"abs": link, "pdf": link} if kept else {})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"id": "x" * 129}, "over 128 chars"),
        ({"version": 2**31}, "version 2147483648 out of range"),
        ({"version": 0}, "version 0 out of range"),
        ({"title": " \u200b "}, "no title"),
    ],
)
def test_records_that_cannot_be_stored_are_refused_with_a_reason(
    change: dict[str, object], message: str
) -> None:
    with pytest.raises(BadRecord, match=message):
        normalize(replace(_record(()), **change))  # type: ignore[arg-type]


def test_fields_longer_than_their_columns_are_refused_or_cut() -> None:
    record = replace(
        _record(()),
        categories=("cs." + "X" * 70, "cs.LG"),
        doi="10.1/" + "d" * 300,
        abstract="word " * 10_000,
    )
    out = normalize(record)
    assert out.categories == ("cs.LG",)
    assert out.doi == ""
    assert len(out.abstract) <= 20_000
