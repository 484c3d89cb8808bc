"""normalize()'s whole-record fast paths give what the field-by-field rules give.

The rules themselves are in test_normalize.py; here each shortcut is checked against a
plain reference of the same rule on inputs built to sit on its edges.
"""

from __future__ import annotations

import itertools
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.ingest.normalize import _STRIP, _clean_author, clean_text, normalize
from bot.store.columns import sqlite_time
from bot.types import Author, PaperRecord

WHEN = datetime(2026, 6, 28, 9, tzinfo=UTC)
# Characters that change what cleaning does: whitespace of several kinds, invisible and
# control characters, a lone surrogate, a combining accent, and the fast path's "|".
EDGES = ("a", "é", " ", "\n", "\t", "\u200b", "\x85", "\xa0", "\u0301", "\ud800", "\x1c",
         "\u2000", "\x07", "\x9b", "|", "\ufeff")  # fmt: skip


def reference_clean(text: str) -> str:
    """The rule spelled out: drop invisibles, compose, collapse whitespace."""
    text = unicodedata.normalize("NFC", text.translate(_STRIP))
    return " ".join(text.split())


def test_clean_text_matches_the_rule_on_every_short_mix_of_edge_characters() -> None:
    for size in range(4):
        for chars in itertools.product(EDGES, repeat=size):
            text = "".join(chars)
            assert clean_text(text) == reference_clean(text), repr(text)


def _record(authors: tuple[Author, ...], **fields: object) -> PaperRecord:
    base = PaperRecord(
        id="2606.01234", version=1, title="A tidy title", abstract="A tidy abstract.",
        authors=authors, categories=("cs.LG",), published=WHEN, updated=WHEN, source="arxiv",
        links={"abs": "https://arxiv.org/abs/2606.01234v1"},
    )  # fmt: skip
    return replace(base, **fields)  # type: ignore[arg-type]


def test_a_record_with_nothing_to_tidy_is_returned_itself() -> None:
    record = _record((Author("Ayşe Çağatan", ("Boğaziçi University",)), Author("Yi Wu")))
    assert normalize(record) is record
    wrapped = replace(record, abstract="A tidy\n  abstract.")
    out = normalize(wrapped)
    assert out is not wrapped
    assert out.abstract == "A tidy abstract."
    assert out.authors is record.authors


@pytest.mark.parametrize(
    "names",
    [
        ("Ann | Lee", "Bo"),  # a name holding the separator, spaced: the slow path, kept
        ("Ann|Lee", "Bo"),  # holding it unspaced: the fast path, kept
        ("Ann", ""),  # an empty name: dropped
        ("Ann ", "Bo"),  # space-padded: trimmed
        ("|", "Bo"),
        (unicodedata.normalize("NFD", "Çağatan"), "Bo"),  # decomposed: composed
        ("Ann", "x" * 201),  # over the limit: cut
    ],
)
def test_author_lists_on_the_fast_path_edges_clean_like_each_author_alone(
    names: tuple[str, ...],
) -> None:
    affiliations = (("MIT", "MIT |Lab"), ("", " ETH"), (), ("A||B",))
    authors = tuple(Author(n, a) for n, a in zip(names, itertools.cycle(affiliations)))
    # The reference: each author through the per-author rule, the blank ones left out.
    expected = tuple(a for a in map(_clean_author, authors) if a is not None)
    assert normalize(_record(authors)).authors == expected


@pytest.mark.parametrize(
    "when",
    [
        datetime(2026, 7, 1, 9, 30, 15, 123456, tzinfo=UTC),
        datetime(2026, 7, 1, tzinfo=UTC),  # no microseconds: still six digits
        datetime(2026, 7, 1, 2, tzinfo=timezone(timedelta(hours=2))),  # an offset: as UTC
        datetime(2026, 7, 1, 9),  # naive: UTC by convention
    ],
)
def test_sqlite_times_are_written_as_sqlalchemy_writes_them(when: datetime) -> None:
    utc = when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    assert sqlite_time(when) == utc.strftime("%Y-%m-%d %H:%M:%S.%f")
