"""One compiled engine that matches papers against every topic and every active alert.

How a paper is matched, and why it costs what the paper and its candidate queries
cost, never what the total number of alerts costs:

1. Every term of every query becomes a `Pattern` (folded words; interned, so 3,000
   alerts on `GRPO` share one pattern, decided once per paper).
2. Every pattern is indexed under one key that any paper it matches must have (see
   bot.matching.index): a word, a word pair, a word prefix, a category, a name key. A
   paper's distinct keys are intersected with these hash tables; words, two-word
   phrases and categories found there match outright, longer phrases and names are
   verified on the paper's words. The result is the exact set of patterns it has.
3. Each query is listed under a few *anchor* patterns (every alternative of an OR,
   the rarest-looking conjunct of an AND): a query can only match if an anchor does,
   since a query always needs a positive term (see bot.matching.query). Only the queries
   anchored by the paper's patterns are evaluated: a single term is its anchor (its
   row is copied, in C); most others are one C-level set check with a row built at
   compile time (`_fast_path`); the rest run their compiled check and list the terms
   that fired.

The index is a token-hash equivalent of a multi-pattern automaton: it needs no
rebuild, so adding or removing an alert touches only that alert's patterns and index
entries. User input is never turned into a regular expression.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Sequence
from typing import Any

from bot.matching.index import PatternIndex
from bot.matching.patterns import Pattern, compile_term, pattern_cost, term_label
from bot.matching.query import Node, Term, parse_query, topic_query
from bot.matching.rows import (
    ALWAYS,
    CompiledQuery,
    Fast,
    Nested,
    Plan,
    Row,
    all_leaves,
    build_matches,
    build_plan,
    slot_of,
)
from bot.matching.terms import (
    Check,
    Tree,
    compile_check,
    compile_tree,
    positive_leaves,
    unique,
)
from bot.matching.textnorm import PaperText
from bot.types import Match, MatchKind, PaperRecord

log = logging.getLogger(__name__)


class MatchEngine:
    """The compiled engine (a `PaperMatcher`): topics and alerts, one index.

    A query is kept in one of three tables, by anchor pattern id, then by slot:
    `_direct` (a single term: its Match fields), `_fast` (decided by one C-level
    check whose match does not depend on which other terms fired, see `_fast_path`)
    and `_nested` (everything else: evaluated by its compiled check, terms collected).
    """

    def __init__(self) -> None:
        self._ids: dict[Pattern, int] = {}
        self._patterns: dict[int, Pattern] = {}
        self._uses: Counter[int] = Counter()
        self._next_id = 0
        self._index = PatternIndex()
        self._queries: dict[int, int | CompiledQuery] = {}  # slot -> pattern id (a term) | query
        self._direct: dict[int, dict[int, Row]] = {}
        self._fast: dict[int, dict[int, Fast]] = {}
        self._nested: dict[int, dict[int, Nested]] = {}
        self._terms: dict[str, tuple[str]] = {}  # one `(label,)` per label, shared
        # The three tables above joined by anchor, as tuples (None: rebuild on use), so
        # a fired pattern costs one lookup, not one per table (see `Plan`).
        self._plans: dict[int, Plan | None] = {}

    def __len__(self) -> int:
        return len(self._queries)

    def stats(self) -> dict[str, int]:
        """Sizes, for diagnostics: queries, distinct patterns, index keys."""
        return {
            "queries": len(self._queries),
            "patterns": len(self._patterns),
            "index_keys": self._index.key_count(),
        }

    def add_alert(self, alert_id: int, query: str | Node) -> None:
        """Add (or replace) one alert; raises QueryError when the query is malformed."""
        node = parse_query(query) if isinstance(query, str) else query
        self._add(MatchKind.ALERT, alert_id, node)

    def remove_alert(self, alert_id: int) -> bool:
        return self._remove(slot_of(MatchKind.ALERT, alert_id))

    def add_topic(self, topic_id: int, query: str, categories: Sequence[str] = ()) -> None:
        """Add (or replace) a topic: its categories (if any) AND its query (if any)."""
        node = topic_query(query, categories)
        if node is None:
            log.warning("matching.empty_topic", extra={"topic_id": topic_id})
            self._remove(slot_of(MatchKind.TOPIC, topic_id))
            return
        self._add(MatchKind.TOPIC, topic_id, node)

    def remove_topic(self, topic_id: int) -> bool:
        return self._remove(slot_of(MatchKind.TOPIC, topic_id))

    def match(self, paper: PaperRecord) -> list[Match]:
        """Every topic and alert the paper matches (in no particular order), with the
        terms that fired."""
        # Every pattern is indexed, so `true` holds exactly the patterns the paper
        # matches: evaluating a query is then set operations, no text work.
        true = self._index.find(PaperText(paper))
        plans = self._plans
        rows: list[Row] = []
        found: dict[int, Row] = {}  # by slot: an OR may be anchored twice
        again: list[int] = []
        for pid in plans.keys() & true:
            direct, fast, nested = plans[pid] or self._plan(pid)
            rows += direct  # single terms: their rows as they are
            for slot, check, row in fast:
                if check(true):
                    if slot in found:
                        again.append(slot)  # two alternatives fired: collect the terms
                    found[slot] = row
            for slot, residual, query in nested:
                if slot not in found and (residual is None or residual(true)):
                    found[slot] = query.row(true)
        for slot in again:
            twice = self._queries[slot]
            assert isinstance(twice, CompiledQuery)
            found[slot] = twice.row(true)
        rows += found.values()
        return build_matches(paper.id, rows)

    def _add(self, kind: MatchKind, ref_id: int, node: Node) -> None:
        slot = slot_of(kind, ref_id)
        self._remove(slot)
        labels: dict[int, str] = {}

        def leaf(term: Term) -> int:
            pid = self._intern(compile_term(term))
            labels.setdefault(pid, term_label(term))
            return pid

        tree = compile_tree(node, leaf)
        if isinstance(tree, int):
            self._queries[slot] = tree
            label = labels[tree]
            single = self._terms.setdefault(label, (label,))
            self._direct.setdefault(tree, {})[slot] = (kind, ref_id, single)
            self._plans[tree] = None
            return
        positive = tuple(dict.fromkeys(positive_leaves(tree)))
        names = tuple(labels[i] for i in positive)
        repeats = len(set(names)) < len(names)
        fast = self._fast_path(tree)
        query = CompiledQuery(kind, ref_id, tree, positive, names, repeats)
        self._queries[slot] = query
        if fast is None:
            for pid, residual in self._nested_checks(tree).items():
                self._nested.setdefault(pid, {})[slot] = (residual, query)
                self._plans[pid] = None
            return
        for pid in self._anchors(tree):
            fired = {pid, *fast[1]}
            terms = unique(name for p, name in zip(positive, names, strict=True) if p in fired)
            self._fast.setdefault(pid, {})[slot] = (fast[0], (kind, ref_id, terms))
            self._plans[pid] = None

    def _fast_path(self, tree: Tree) -> tuple[Check, tuple[int, ...]] | None:
        """(check, terms that fired besides the anchor) when the query's match, given
        one of its anchors fired and no other did, is a fixed row decided by one
        C-level set method: a flat AND, a flat OR, or an AND of terms with one flat OR
        of terms (`abs:(a OR b) ANDNOT cat:x`). None: the query is evaluated in full."""
        assert not isinstance(tree, int)
        is_or, items, excluded, flat = tree
        if is_or:
            return (ALWAYS, ()) if flat else None
        k = self._anchor_item(items)
        anchor_item = items[k]
        rest = items[:k] + items[k + 1 :]
        leaves = [i for i in (*rest, *excluded) if isinstance(i, int)]
        if len(leaves) < len(rest) + len(excluded):
            return None
        if not isinstance(anchor_item, int) and not (anchor_item[0] and anchor_item[3]):
            return None
        check = compile_check((False, rest, excluded, True)) if leaves else ALWAYS
        return check, tuple(leaves[: len(rest)])

    def _nested_checks(self, tree: Tree) -> dict[int, Check | None]:
        """Under each anchor of a query evaluated in full, what decides it once that
        anchor fired. An OR holds when one of its items does, and an item only when
        one of its own anchors fired: under each anchor only the items it anchors are
        checked (`au:wu_y OR (a AND b)` under `a`: is `b` there; under the name:
        nothing), so a candidate costs one C-level check, not the whole tree."""
        assert not isinstance(tree, int)
        if not tree[0]:
            return dict.fromkeys(self._anchors(tree), self._residual(tree))
        by_anchor: dict[int, list[Tree]] = {}
        for item in tree[1]:
            for pid in self._anchors(item):
                by_anchor.setdefault(pid, []).append(item)
        return {
            pid: self._residual(items[0])
            if len(items) == 1
            else compile_check((True, tuple(items), (), False))
            for pid, items in by_anchor.items()
        }

    def _remove(self, slot: int) -> bool:
        query = self._queries.pop(slot, None)
        if query is None:
            return False
        if isinstance(query, int):
            anchors, uses = [query], [query]
        else:
            anchors, uses = list(self._anchors(query.tree)), all_leaves(query.tree)
        for pid in anchors:
            left = False
            for table in (self._direct, self._fast, self._nested):
                entries: dict[int, Any] | None = table.get(pid)
                if entries is not None and entries.pop(slot, None) is not None and not entries:
                    del table[pid]
                left = left or pid in table
            if left:
                self._plans[pid] = None
            else:
                self._plans.pop(pid, None)
        for pid in uses:
            self._uses[pid] -= 1
            if not self._uses[pid]:
                self._index.remove(pid)
                del self._uses[pid], self._ids[self._patterns.pop(pid)]
        return True

    def _plan(self, pid: int) -> Plan:
        plan = self._plans[pid] = build_plan(
            self._direct.get(pid, {}), self._fast.get(pid, {}), self._nested.get(pid, {})
        )
        return plan

    def _intern(self, pattern: Pattern) -> int:
        pid = self._ids.get(pattern)
        if pid is None:
            pid = self._ids[pattern] = self._next_id
            self._patterns[pid] = pattern
            self._next_id += 1
            self._index.add(pid, pattern)
        self._uses[pid] += 1
        return pid

    def _anchors(self, tree: Tree) -> set[int]:
        """Patterns under which to index a query: one of them must match for it to."""
        if isinstance(tree, int):
            return {tree}
        is_or, items, _, _ = tree
        if is_or:
            return set().union(*[self._anchors(item) for item in items])
        return self._anchors(items[self._anchor_item(items)])

    def _anchor_item(self, items: tuple[Tree, ...]) -> int:
        """Which item of an AND anchors it: the one whose anchors look rarest."""
        costs = [sum(pattern_cost(self._patterns[p]) for p in self._anchors(i)) for i in items]
        return costs.index(min(costs))

    def _residual(self, tree: Tree) -> Check | None:
        """What decides a query once one of its anchors matched (None: nothing more).

        An anchor of a flat OR is one of its terms; an anchor of an AND whose anchoring
        item is a term or a flat OR of terms makes that item hold, so only the rest of
        the AND is checked: `ti:x AND abs:"y z"` anchored on the phrase checks `x`.
        """
        if isinstance(tree, int):
            return None
        is_or, items, excluded, flat = tree
        if is_or:
            return None if flat else compile_check(tree)
        k = self._anchor_item(items)
        anchor = items[k]
        if not isinstance(anchor, int) and not (anchor[0] and anchor[3]):
            return compile_check(tree)
        rest = items[:k] + items[k + 1 :]
        if not (rest or excluded):
            return None
        return compile_check((False, rest, excluded, False))
