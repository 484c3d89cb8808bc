"""What a query's match is made of, and Match objects built in bulk.

A query that is one term keeps only its `Row` (the fields of its Match but the paper);
any other query keeps a `CompiledQuery` (its tree, its check, how to list the terms
that fired). Split from bot.matching.engine, which files them by anchor pattern.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import compress, repeat

from bot.matching.terms import Check, Tree, unique
from bot.types import Match, MatchKind


def _always(_true: set[int]) -> bool:
    """Nothing is left to check: the anchor that fired decides the query."""
    return True


ALWAYS: Check = _always


Row = tuple[MatchKind, int, tuple[str, ...]]  # a Match without its paper
Fast = tuple[Check, Row]  # a query decided by one C-level check once its anchor fired


@dataclass(slots=True)
class CompiledQuery:
    """A query that is not a single term (those live in `MatchEngine._direct` only)."""

    kind: MatchKind
    ref_id: int
    tree: Tree
    positive: tuple[int, ...]  # pattern ids outside exclusions, first use first ...
    labels: tuple[str, ...]  # ... and their labels
    repeats: bool  # two positive patterns have the same label

    def row(self, true: set[int]) -> Row:
        """The match, with the positive terms that fired."""
        terms = tuple(compress(self.labels, map(true.__contains__, self.positive)))
        return (self.kind, self.ref_id, unique(terms) if self.repeats else terms)


# A query evaluated in full, under one of its anchors: what decides it once that anchor
# fired (None: nothing more) and the query.
Nested = tuple[Check | None, CompiledQuery]

# What one fired pattern leads to: the rows of the single terms it is, the queries it
# anchors that one check decides, those evaluated in full; each entry with its slot.
Plan = tuple[
    tuple[Row, ...],
    tuple[tuple[int, Check, Row], ...],
    tuple[tuple[int, Check | None, CompiledQuery], ...],
]


def build_plan(direct: dict[int, Row], fast: dict[int, Fast], nested: dict[int, Nested]) -> Plan:
    """One pattern's entries of the engine's three tables (slot -> entry) as tuples: a
    paper walks them with no dict iteration and one lookup per fired pattern."""
    return (
        tuple(direct.values()),
        tuple((slot, check, row) for slot, (check, row) in fast.items()),
        tuple((slot, residual, query) for slot, (residual, query) in nested.items()),
    )


_new = object.__new__
_SETTERS = tuple(getattr(Match, name).__set__ for name in ("paper_id", "kind", "ref_id", "terms"))


def build_matches(paper_id: str, rows: list[Row]) -> list[Match]:
    """`[Match(paper_id, *row) for row in rows]`, built column by column in C loops.

    A paper matches ~150 queries, so this runs ~300,000 times a day: the generated
    __init__ of a frozen dataclass costs about twice as much as filling the slots.
    """
    if not rows:
        return []
    n = len(rows)
    found: list[Match] = list(map(_new, repeat(Match, n)))
    for setter, column in zip(
        _SETTERS, (repeat(paper_id, n), *zip(*rows, strict=True)), strict=True
    ):
        deque(map(setter, found, column), maxlen=0)
    return found


def slot_of(kind: MatchKind, ref_id: int) -> int:
    """A query's key as one int (ints hash in C, enum members in Python)."""
    return ref_id * 2 + (kind is MatchKind.ALERT)


def all_leaves(tree: Tree) -> list[int]:
    """Every leaf, exclusions included, as often as it occurs."""
    if isinstance(tree, int):
        return [tree]
    return [leaf for part in (tree[1], tree[2]) for item in part for leaf in all_leaves(item)]
