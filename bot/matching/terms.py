"""A query's tree over its terms' patterns, and the per-query baseline evaluator.

A compiled tree has pattern ids at its leaves (see bot.matching.patterns for what one
pattern means on a paper); `holds` and `compile_check` evaluate it given which patterns
a paper has. The engine (bot.matching.engine) and the baseline (`fired_terms`) share
these semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeAlias

from bot.matching.patterns import Pattern, compile_term, pattern_matches, term_label
from bot.matching.query import And, Node, Or, Term
from bot.matching.textnorm import PaperText

# A compiled query: a leaf is a pattern id; otherwise (is_or, items, excluded, flat)
# where `flat` says every item and exclusion is a leaf.
Tree: TypeAlias = "int | tuple[bool, tuple[Tree, ...], tuple[Tree, ...], bool]"


def holds(tree: Tree, test: Callable[[int], bool]) -> bool:
    """Evaluate a compiled tree; `test` says whether a leaf (pattern id) matches."""
    if type(tree) is int:
        return test(tree)
    is_or, items, excluded, flat = tree  # type: ignore[misc]
    if flat:  # the common shape; with a set's __contains__ this loops in C
        if is_or:
            return any(map(test, items))
        return all(map(test, items)) and not any(map(test, excluded))
    # Plain loops, not generators: this runs for every candidate query of every paper.
    for item in items:
        if (test(item) if type(item) is int else holds(item, test)) is is_or:
            return is_or  # OR: one hit decides; AND: one miss decides
    if is_or:
        return False
    for item in excluded:  # noqa: SIM110
        if test(item) if type(item) is int else holds(item, test):
            return False
    return True


Check = Callable[[set[int]], bool]  # does a query hold, given the paper's patterns


def compile_check(tree: Tree) -> Check:
    """The tree as one callable over the set of the paper's patterns, with the answers
    of `holds`; the common shapes become one set method, run in C."""
    if isinstance(tree, int):
        return frozenset((tree,)).issubset
    is_or, items, excluded, _ = tree
    need = frozenset(i for i in items if isinstance(i, int))
    veto = frozenset(i for i in excluded if isinstance(i, int))
    subs = tuple(compile_check(i) for i in items if not isinstance(i, int))
    bans = tuple(compile_check(i) for i in excluded if not isinstance(i, int))
    if is_or:
        if not subs:
            return lambda true: not need.isdisjoint(true)
        return lambda true: not need.isdisjoint(true) or any(c(true) for c in subs)
    if not (subs or bans):
        if not veto:
            return need.issubset
        if not need:
            return veto.isdisjoint
        return lambda true: need.issubset(true) and veto.isdisjoint(true)
    return lambda true: (
        need.issubset(true)
        and veto.isdisjoint(true)
        and all(c(true) for c in subs)
        and not any(c(true) for c in bans)
    )


def positive_leaves(tree: Tree) -> list[int]:
    if isinstance(tree, int):
        return [tree]
    return [leaf for item in tree[1] for leaf in positive_leaves(item)]


class BaselineQuery:
    """The straightforward per-query evaluator: one tree, checked term by term.

    No index and nothing shared between queries; the engine must agree with it on
    every paper (tests and bench/match.py check that).
    """

    __slots__ = ("labels", "patterns", "tree")

    def __init__(self, node: Node) -> None:
        terms: list[Term] = []

        def leaf(term: Term) -> int:
            terms.append(term)
            return len(terms) - 1

        self.tree = compile_tree(node, leaf)
        self.patterns = [compile_term(term) for term in terms]
        first: dict[Pattern, str] = {}
        for pattern, term in zip(self.patterns, terms, strict=True):
            first.setdefault(pattern, term_label(term))
        self.labels = [first[pattern] for pattern in self.patterns]

    def fired(self, text: PaperText) -> tuple[str, ...] | None:
        """The positive terms that fired if the query matches the paper, else None."""
        patterns = self.patterns

        def test(i: int) -> bool:
            return pattern_matches(patterns[i], text)

        if not holds(self.tree, test):
            return None
        return unique(self.labels[i] for i in positive_leaves(self.tree) if test(i))


def fired_terms(node: Node, text: PaperText) -> tuple[str, ...] | None:
    """Evaluate one tree on one paper with the baseline (see BaselineQuery)."""
    return BaselineQuery(node).fired(text)


def compile_tree(node: Node, leaf: Callable[[Term], int]) -> Tree:
    """The tree with each Term replaced by the id `leaf` gives it."""
    if isinstance(node, Term):
        return leaf(node)
    items: tuple[Tree, ...]
    excluded: tuple[Tree, ...] = ()
    if isinstance(node, Or):
        items = tuple(compile_tree(n, leaf) for n in node.items)
    else:
        assert isinstance(node, And)
        items = tuple(compile_tree(n, leaf) for n in node.include)
        excluded = tuple(compile_tree(n, leaf) for n in node.exclude)
    flat = all(type(item) is int for item in (*items, *excluded))
    return (isinstance(node, Or), items, excluded, flat)


def unique(values: Iterable[str]) -> tuple[str, ...]:
    """Values in first-seen order, without repeats."""
    return tuple(dict.fromkeys(values))
