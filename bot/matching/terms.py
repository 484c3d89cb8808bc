"""What one term means against one paper, and the per-query baseline evaluator.

A parsed `Term` compiles to a `Pattern` of folded words; `pattern_matches` decides it
on a `PaperText` by words, never substrings: phrases are consecutive words inside one
segment (one title, one author name, one affiliation); `au:` compares names the way
people write them (surname exact, given names or initials in order before it).
The engine (bot.matching) and the baseline (`fired_terms`) share these semantics.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TypeAlias

from bot.matching.query import And, Node, Or, Term
from bot.matching.textnorm import PaperText, fold_category, words


@dataclass(frozen=True, slots=True)
class Pattern:
    """A term as compared with a paper: folded words of one field.

    For `au:` the last `surname` words form the surname; the words before it are given
    names or initials, matched in order anywhere before the surname in ONE author.
    `prefix`: the last word is a prefix (`agent*`, `cat:cs.*`).
    """

    field: str
    words: tuple[str, ...]
    prefix: bool = False
    surname: int = 1


def compile_term(term: Term) -> Pattern:
    """The Pattern of a parsed Term (same semantics for the engine and the baseline)."""
    if term.field == "cat":
        return Pattern("cat", (fold_category(term.value),), term.prefix)
    if term.field == "au" and not term.quoted and "_" in term.value:
        surname, *given = term.value.split("_")
        last = words(surname)
        if last:  # `Wu_Y`: surname Wu, initial Y
            first = [w for part in given for w in words(part)]
            return Pattern("au", (*first, *last), False, len(last))
    return Pattern(term.field, tuple(words(term.value)), term.prefix)


def term_label(term: Term) -> str:
    """How a fired term is reported for highlighting: as written, `*` kept."""
    return term.value + ("*" if term.prefix else "")


def pattern_matches(pattern: Pattern, text: PaperText) -> bool:
    """Whether the paper contains the pattern, word by word, inside one segment."""
    field, found = pattern.field, pattern.words
    if field == "cat":
        if pattern.prefix:
            return any(c.startswith(found[0]) for c in text.categories)
        return found[0] in text.category_keys
    tokens = text.tokens(field)
    if len(found) == 1 and not pattern.prefix and field != "au":
        return found[0] in tokens  # the common case: one word
    # Cheap rejections first: the words that must appear exactly (given names of an
    # author may be initials, so only the surname counts there).
    must = found[-pattern.surname :] if field == "au" else found
    for word in must[:-1] if pattern.prefix else must:
        if word not in tokens:
            return False
    if pattern.prefix and not text.has_prefix(field, found[-1]):
        return False
    if field == "au":
        return any(_name_in(pattern, seg) for seg in text.segments("au"))
    if len(found) == 1:
        return True
    return any(_phrase_at(seg, found, pattern.prefix, 0) >= 0 for seg in text.segments(field))


def _phrase_at(seg: tuple[str, ...], found: tuple[str, ...], prefix: bool, start: int) -> int:
    """Index in `seg` (from `start`) where the consecutive words begin, or -1."""
    n, last = len(found), len(found) - 1
    stop = len(seg) - n + 1
    if prefix and n == 1:
        return next((i for i in range(start, stop) if seg[i].startswith(found[0])), -1)
    i = start
    while i < stop:
        try:
            i = seg.index(found[0], i, stop)
        except ValueError:
            return -1
        for j in range(1, n):
            word = seg[i + j]
            if word != found[j] and not (prefix and j == last and word.startswith(found[j])):
                break
        else:
            return i
        i += 1
    return -1


def _name_in(pattern: Pattern, seg: tuple[str, ...]) -> bool:
    cut = len(pattern.words) - pattern.surname
    given, surname = pattern.words[:cut], pattern.words[cut:]
    at = _phrase_at(seg, surname, pattern.prefix, 0)
    while at >= 0:
        k = 0  # given names/initials in order, anywhere before the surname
        for word in seg[:at]:
            if k < len(given) and _same_name(given[k], word):
                k += 1
        if k == len(given):
            return True
        at = _phrase_at(seg, surname, pattern.prefix, at + 1)
    return False


def _same_name(wanted: str, word: str) -> bool:
    """`y` matches `yi` and `yi` matches `y` (initials); otherwise names are equal."""
    if wanted == word:
        return True
    return (len(wanted) == 1 and word.startswith(wanted)) or (
        len(word) == 1 and wanted.startswith(word)
    )


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
