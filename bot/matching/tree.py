"""The query tree: terms combined by AND (with exclusions) and OR, normalized, and
its canonical text.

An AND keeps its included and excluded parts apart, nested ANDs and ORs are
flattened, excluded ORs become one exclusion each. `format_query` prints every operator
explicitly and parenthesizes so that arXiv's reading (bot.matching.query) gives the same
tree back.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.matching.lexer import DATE_FIELDS, Term


@dataclass(frozen=True, slots=True)
class And:
    """All of `include` and none of `exclude` (exclude may be empty)."""

    include: tuple[Node, ...]
    exclude: tuple[Node, ...] = ()


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Node, ...]


Node = Term | And | Or


def make_and(include: list[Node], exclude: list[Node]) -> Node:
    """An AND level, flattened: nested ANDs merge, excluded ORs split into exclusions."""
    inc: list[Node] = []
    exc: list[Node] = []
    for node in include:
        if isinstance(node, And):
            inc.extend(node.include)
            exc.extend(node.exclude)
        else:
            inc.append(node)
    for node in exclude:
        exc.extend(node.items if isinstance(node, Or) else (node,))
    if len(inc) == 1 and not exc:
        return inc[0]
    return And(tuple(inc), tuple(exc))


def make_or(items: list[Node]) -> Node:
    flat: list[Node] = []
    for node in items:
        flat.extend(node.items if isinstance(node, Or) else (node,))
    return flat[0] if len(flat) == 1 else Or(tuple(flat))


def format_query(node: Node) -> str:
    """The canonical string of a tree, every operator explicit; parsing it gives the
    same tree back, under arXiv's reading (an AND inside an OR is parenthesized)."""
    if isinstance(node, Term):
        return format_term(node)
    if isinstance(node, Or):
        return " OR ".join(_grouped(item, And) for item in node.items)
    text = " AND ".join(_grouped(item, Or) for item in node.include)
    for item in node.exclude:
        text += " ANDNOT " + _grouped(item, (And, Or))
    return text


def format_term(term: Term) -> str:
    """One term as written in the canonical form: `ti:"a b"`, `au:wu*`, `id:…`."""
    if term.field in DATE_FIELDS:
        return f"{term.field}:[{term.value}]"
    if term.quoted:
        return f'{term.field}:"{term.value}"'
    return f"{term.field}:{term.value}{'*' if term.prefix else ''}"


def _grouped(node: Node, needs: type | tuple[type, ...]) -> str:
    text = format_query(node)
    return f"({text})" if isinstance(node, needs) else text


def format_tree(node: Node, indent: str = "") -> list[str]:
    """The tree as indented lines, for `papertide query check`."""
    if isinstance(node, Term):
        return [indent + format_query(node)]
    if isinstance(node, Or):
        lines = [indent + "OR"]
        for item in node.items:
            lines += format_tree(item, indent + "  ")
        return lines
    lines = [indent + "AND"]
    for item in node.include:
        lines += format_tree(item, indent + "  ")
    for item in node.exclude:
        lines += [indent + "  NOT", *format_tree(item, indent + "    ")]
    return lines


def query_terms(node: Node, *, positive_only: bool = False) -> list[Term]:
    """Every term in the tree, left to right (only the non-excluded ones if asked)."""
    if isinstance(node, Term):
        return [node]
    found: list[Term] = []
    children = node.items if isinstance(node, Or) else node.include
    for child in children:
        found += query_terms(child, positive_only=positive_only)
    if isinstance(node, And) and not positive_only:
        for child in node.exclude:
            found += query_terms(child)
    return found
