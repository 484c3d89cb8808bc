"""The query grammar papertide had before revision 0004, read into today's tree.

Until then, words side by side meant AND, `AND`/`ANDNOT`/`NOT`/juxtaposition formed one
level read left to right with `OR` below it (`a OR b AND c` was `a OR (b AND c)`),
and `au:X_Yz` meant surname X with given names Yz. Migration 0004 rewrites every stored
query with `rewrite_legacy`, and the catalog sync warns about topic files whose queries
now read differently (`legacy_meaning`). Each tree uses today's terms, built so that
they compile to the very pattern the old term compiled to.
"""

from __future__ import annotations

import logging

from bot.errors import QueryError
from bot.matching.lexer import DEFAULT_FIELD, Term, Tok, lex
from bot.matching.patterns import Pattern, check_term, compile_term
from bot.matching.query import (
    MAX_DEPTH,
    MAX_LENGTH,
    Node,
    format_query,
    make_and,
    make_or,
    parse_query,
)
from bot.matching.textnorm import words

log = logging.getLogger(__name__)

_LUCENE_MARKS = frozenset("^~?")


def parse_legacy(expr: str) -> Node:
    """`expr` as the old grammar read it, in today's tree; QueryError if it did not parse."""
    if len(expr) > MAX_LENGTH or not expr.strip():
        raise QueryError("not a query the old grammar accepted", position=0)
    return _Legacy(lex(expr, legacy=True)).parse()


def rewrite_legacy(stored: str) -> str | None:
    """The text that means today what `stored` meant before 0004, or None when `stored`
    already means the same (or never parsed: then it stays as it is, and is reported)."""
    try:
        old = parse_legacy(stored)
    except QueryError:
        return None
    try:
        if parse_query(stored) == old:
            return None
    except QueryError:
        pass
    text = format_query(old)
    try:
        same = parse_query(text) == old
    except QueryError:
        same = False
    if not same:  # never expected: keep the row as it is rather than guess
        log.warning("matching.legacy_unrewritable", extra={"query": stored[:200]})
        return None
    return text


def legacy_meaning(expr: str) -> str | None:
    """For a query that now reads differently than it did before 0004: today's spelling
    of its old meaning. None when both readings agree or either does not parse."""
    try:
        return rewrite_legacy(expr) if parse_query(expr) != parse_legacy(expr) else None
    except QueryError:
        return None


class _Legacy:
    """The old precedence: AND-level (AND, ANDNOT, NOT, side by side) left to right, OR below."""

    def __init__(self, toks: list[Tok]) -> None:
        self.toks = toks
        self.at = 0
        self.depth = 0

    def parse(self) -> Node:
        node = self.parse_or(DEFAULT_FIELD)
        if self.toks[self.at].kind != "end":
            raise QueryError("unexpected ')'", position=self.toks[self.at].pos)
        return node

    def peek(self) -> Tok:
        return self.toks[self.at]

    def parse_or(self, field: str) -> Node:
        items = [self.parse_and(field)]
        while self.peek().kind == "op" and self.peek().text == "OR":
            self.at += 1
            items.append(self.parse_and(field))
        return make_or(items)

    def parse_and(self, field: str) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("NOT", "ANDNOT"):
            raise QueryError(f"{tok.text} needs a term before it", position=tok.pos)
        include = [self.parse_operand(field)]
        exclude: list[Node] = []
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text != "OR":
                self.at += 1
                negate = tok.text in ("NOT", "ANDNOT")
                if tok.text == "AND" and self.peek().kind == "op" and self.peek().text == "NOT":
                    self.at += 1
                    negate = True
                (exclude if negate else include).append(self.parse_operand(field))
            elif tok.kind in ("term", "(", "group"):
                include.append(self.parse_operand(field))
            else:
                return make_and(include, exclude)

    def parse_operand(self, field: str) -> Node:
        tok = self.peek()
        if tok.kind == "term" and tok.term is not None:
            self.at += 1
            term = tok.term
            if not tok.explicit and field != term.field:
                term = Term(field, term.value, term.quoted, term.prefix)
            return _today(term, tok.pos)
        if tok.kind in ("(", "group"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QueryError("too deeply nested", position=tok.pos)
            self.at += 1
            node = self.parse_or(tok.text if tok.kind == "group" else field)
            if self.peek().kind != ")":
                raise QueryError("unclosed parenthesis", position=tok.pos)
            self.at += 1
            self.depth -= 1
            return node
        raise QueryError("expected a term", position=tok.pos)


def _old_pattern(term: Term) -> Pattern:
    """What a term compiled to before 0004 (only `au:X_Y` differs from today)."""
    if term.field == "au" and not term.quoted and "_" in term.value:
        surname, *given = term.value.split("_")
        last = words(surname)
        if last:
            first = [w for part in given for w in words(part)]
            return Pattern("au", (*first, *last), False, len(last))
    return compile_term(term)


def _today(term: Term, pos: int) -> Term:
    """A term of today's grammar that compiles to the old term's pattern (checked as
    the old grammar checked it: what it refused, this refuses)."""
    return check_term(_respelled(term), pos)


def _respelled(term: Term) -> Term:
    if term.field == "cat":
        return term
    old = _old_pattern(term)
    if not term.quoted and _LUCENE_MARKS.intersection(term.value):
        # `x^2` was the phrase "x 2"; today ^ ~ ? are refused, hyphens still join words.
        term = Term(term.field, "-".join(words(term.value)), prefix=term.prefix)
    if compile_term(term) == old or term.field != "au":
        return term
    surname, *given = term.value.split("_")
    if old.surname == 1:  # `au:Wu_Yi` was Yi (given) Wu (surname): `au:"Yi Wu"`
        spelled = Term("au", " ".join([*given, surname]).strip(), quoted=True)
        if compile_term(spelled) == old:
            return spelled
        return Term("au", " ".join(old.words), quoted=True)
    # A surname of several words with full given names has no exact spelling today:
    # keep the initials, which finds every paper the old term found.
    initials = [w[0].upper() for part in given for w in words(part)]
    return Term("au", "_".join([surname, *initials]))
