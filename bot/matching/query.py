"""The query language: arXiv's classic search syntax, read the way arXiv's live API reads
it, parsed into a small immutable tree.

Terms
    `word`, `"exact phrase"`, `word*` (trailing wildcard, at least 2 letters before it).
    A term may carry a field: `ti:` title, `abs:` abstract, `au:` author, `cat:`
    category, `co:` comment, `jr:` journal ref, `id:` arXiv id, `doi:`, `rn:` report
    number, `aff:` affiliation (papertide's), `all:` title and abstract (the default),
    `submittedDate:[A TO B]` and `lastUpdatedDate:[A TO B]`. `field:(a OR b)` applies
    the field to a whole group. `au:del_maestro` joins a surname's words, `au:Wu_Y`
    adds an initial (bot.matching.patterns).

Operators, as arXiv's live API (Lucene 2.3's query parser, default operator OR) reads
them inside each pair of parentheses:
    - terms side by side mean OR: `ti:(space time)` is `ti:space OR ti:time`;
    - `AND` makes the terms on both sides required; `ANDNOT x` (or `AND NOT x`,
      `NOT x`, `OR NOT x`) excludes x;
    - when a group has required terms, its optional ones (joined by OR or side by side)
      change only arXiv's ranking, never which papers match: `a OR b AND c` is `b AND c`.
    Only upper-case AND, OR, ANDNOT, NOT are operators. A group made only of
    exclusions matches nothing on arXiv and is refused.

Limits: MAX_LENGTH characters (checked first, so huge input costs nothing), MAX_TERMS
terms, MAX_DEPTH nested parentheses. Every error is a QueryError with a 0-based position.

The tree (bot.matching.tree) is normalized; `format_query` prints the canonical string
with every operator explicit; parse -> format -> parse gives the same tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.errors import QueryError
from bot.matching.lexer import DEFAULT_FIELD, FIELDS, MAX_TERMS, OPERATORS, Term, Tok, lex
from bot.matching.patterns import check_term
from bot.matching.tree import (
    And,
    Node,
    Or,
    format_query,
    format_term,
    format_tree,
    make_and,
    make_or,
    query_terms,
)

__all__ = [
    "DEFAULT_FIELD", "FIELDS", "LOWER_CASE", "MAX_DEPTH", "MAX_LENGTH", "MAX_TERMS",
    "NO_REPORT_NUMBERS", "OPERATORS", "OR_NOT", "SIDE_BY_SIDE", "And", "CheckedQuery", "Node",
    "Or", "Term", "check_query", "format_query", "format_term", "format_tree", "make_and",
    "make_or", "parse_query", "query_problem", "query_terms",
]  # fmt: skip

MAX_LENGTH = 1000
MAX_DEPTH = 8

SIDE_BY_SIDE = "as on arXiv, words side by side mean OR; write AND to require both"
LOWER_CASE = "as on arXiv, lower-case and/or/not are words: operators are AND, OR, ANDNOT"
OR_NOT = "as on arXiv, OR NOT x excludes x from the rest (it does not add 'anything but x')"
NO_REPORT_NUMBERS = "rn: matches no paper here: arXiv's API and feeds carry no report numbers"


@dataclass(frozen=True, slots=True)
class CheckedQuery:
    """A query as stored: its tree, canonical text and what to tell the person who wrote it."""

    node: Node
    text: str
    hints: tuple[str, ...] = ()


def parse_query(expr: str) -> Node:
    """Parse `expr` into a normalized tree, or raise QueryError (one line, position)."""
    return _parse(expr)[0]


def check_query(expr: str) -> CheckedQuery:
    """Parse `expr` and check that its canonical form, the form that is stored, parses
    back to the same tree within the limits (it can be longer than what was typed)."""
    node, hints = _parse(expr)
    text = format_query(node)
    if len(text) > MAX_LENGTH:
        raise QueryError(
            f"query too long once written out in full ({len(text)} characters, "
            f"max {MAX_LENGTH}): shorten it",
            position=0,
        )
    if parse_query(text) != node:  # a bug, never the user's fault: refuse, store nothing
        raise QueryError("query cannot be stored in canonical form", position=0)
    return CheckedQuery(node, text, hints)


def _parse(expr: str) -> tuple[Node, tuple[str, ...]]:
    if len(expr) > MAX_LENGTH:
        raise QueryError(f"query too long ({len(expr)} characters, max {MAX_LENGTH})", position=0)
    if not expr.strip():
        raise QueryError("empty query", position=0)
    parser = _Parser(lex(expr))
    node = parser.parse()
    return node, tuple(dict.fromkeys(parser.hints)) if parser.hints else ()


# How Lucene's query parser files each clause of a group (plain ints: this runs per term).
_SHOULD = 0  # optional: the group needs one of them only if it has no required clause
_MUST = 1
_NOT = 2


class _Parser:
    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.at = 0
        self.depth = 0
        self.hints: list[str] = []

    def parse(self) -> Node:
        node = self.parse_group(DEFAULT_FIELD)
        tok = self.toks[self.at]
        if tok.kind == ")":
            raise QueryError("unexpected ')'", position=tok.pos)
        return node

    def peek(self) -> Tok:
        return self.toks[self.at]

    def parse_group(self, field: str) -> Node:
        """Clauses up to `)` or the end, combined as Lucene's parser combines them."""
        occurs: list[int] = []  # per clause: _SHOULD, _MUST or _NOT
        nodes: list[Node] = []
        starts: list[Tok] = []  # where each clause starts, for errors
        conj: Tok | None = None  # AND, OR or ANDNOT before the next clause
        negate: Tok | None = None  # NOT (or the NOT of ANDNOT) before the next clause
        while True:
            tok = self.toks[self.at]
            if tok.kind == "op":
                self.at += 1
                pending = negate if tok.text == "NOT" else negate or conj  # `AND NOT x`
                if pending is not None:
                    raise QueryError(f"expected a term after {pending.text}", position=tok.pos)
                if tok.text == "NOT":
                    negate = tok
                    continue
                if not nodes:
                    what = " to exclude from" if tok.text == "ANDNOT" else ""
                    raise QueryError(f"{tok.text} needs a term before it{what}", position=tok.pos)
                conj = tok
                negate = tok if tok.text == "ANDNOT" else None
                continue
            if tok.kind == ")" or tok.kind == "end":
                break
            if nodes and conj is None:
                self.hints.append(SIDE_BY_SIDE)
            before = negate or conj
            nodes.append(self.parse_operand(field, before.text if before is not None else None))
            required = conj is not None and conj.text != "OR"
            if negate is not None:
                occurs.append(_NOT)
                if conj is not None and conj.text == "OR":
                    self.hints.append(OR_NOT)
            else:
                occurs.append(_MUST if required else _SHOULD)
            if required and len(occurs) > 1 and occurs[-2] != _NOT:
                occurs[-2] = _MUST  # Lucene: AND binds the clause before it too
            starts.append(negate or tok)
            conj = negate = None
        pending = negate or conj
        if pending is not None:
            raise QueryError(f"expected a term after {pending.text}", position=self.peek().pos)
        if not nodes:
            raise QueryError("expected a term", position=self.peek().pos)
        if len(nodes) == 1 and occurs[0] != _NOT:
            return nodes[0]  # the common case: one term or one group
        return self.combine(occurs, nodes, starts)

    def combine(self, occurs: list[int], nodes: list[Node], starts: list[Tok]) -> Node:
        must: list[Node] = []
        should: list[Node] = []
        excluded: list[Node] = []
        kinds = (should, must, excluded)  # indexed by _SHOULD, _MUST, _NOT
        for occur, node in zip(occurs, nodes, strict=True):
            kinds[occur].append(node)
        if must:
            if should:
                # Shown in chat as code; a backtick inside would end the span early.
                left_out = "`, `".join(format_query(n).replace("`", "ˋ") for n in should)
                self.hints.append(
                    f"as on arXiv, `{left_out}` beside AND changes nothing and is left out: "
                    "put alternatives in parentheses, e.g. (a OR b) AND c"
                )
            return make_and(must, excluded)
        if should:
            return make_and([make_or(should)], excluded)
        first = starts[0]
        raise QueryError(
            f"{first.text or 'NOT'} needs a term to exclude from (alone it matches nothing)",
            position=first.pos,
        )

    def parse_operand(self, field: str, after: str | None) -> Node:
        tok = self.peek()
        if tok.kind == "term" and tok.term is not None:
            self.at += 1
            term = tok.term
            if not tok.explicit and field != term.field:
                term = Term(field, term.value, term.quoted, term.prefix)
            if len(term.value) <= 6 or term.field == "rn":  # cheap test first: runs per term
                self._note(term)
            return check_term(term, tok.pos)
        if tok.kind in ("(", "group"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QueryError(f"too deeply nested (max {MAX_DEPTH} levels)", position=tok.pos)
            self.at += 1
            node = self.parse_group(tok.text if tok.kind == "group" else field)
            if self.peek().kind != ")":
                raise QueryError("unclosed parenthesis", position=tok.pos)
            self.at += 1
            self.depth -= 1
            return node
        where = f" after {after}" if after else ""
        raise QueryError(f"expected a term{where}", position=tok.pos)

    def _note(self, term: Term) -> None:
        if not term.quoted and len(term.value) <= 6 and term.value.upper() in OPERATORS:
            self.hints.append(LOWER_CASE)
        if term.field == "rn":
            self.hints.append(NO_REPORT_NUMBERS)


def query_problem(stored: str) -> str | None:
    """Why a stored query would not load into the engine (None: it loads)."""
    try:
        parse_query(stored)
    except QueryError as exc:
        return str(exc)
    return None


def topic_query(query: str, categories: Sequence[str]) -> Node | None:
    """A topic as one tree: its query AND one of its categories (either may be empty)."""
    cats: list[Node] = []
    for raw in categories:
        value = raw.strip()
        if value:
            cats.append(Term("cat", value.rstrip("*"), prefix=value.endswith("*")))
    parts: list[Node] = [parse_query(query)] if query.strip() else []
    if cats:
        parts.append(make_or(cats))
    return make_and(parts, []) if parts else None
