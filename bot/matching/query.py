"""The query language: arXiv's search syntax, parsed into a small immutable tree.

Terms
    `word`, `"exact phrase"`, `word*` (trailing wildcard, at least 2 letters before it).
    A term may carry a field: `ti:` title, `abs:` abstract, `au:` author, `cat:`
    category, `co:` comment, `jr:` journal ref, `aff:` affiliation, `all:` title and
    abstract (the default). `field:(a OR b)` applies the field to a whole group.
    Words are compared as words (see bot.textnorm): `multi-turn` = `"multi turn"`.
    `cat:cs.AI` is one category, `cat:cs.*` (or `cat:cs`) the whole archive.
    `au:` takes names as people write them: `au:wu`, `au:"Yi Wu"`, `au:Wu_Y`.

Operators and precedence (tightest first)
    1. parentheses and field groups;
    2. `AND`, `ANDNOT`, `NOT` (a synonym of ANDNOT; `AND NOT` works too) and
       juxtaposition (`a b` is `a AND b`), all one level, read left to right;
    3. `OR`.
    So `a OR b ANDNOT c` is `a OR (b ANDNOT c)`; write `(a OR b) ANDNOT c` to exclude
    from both. Operators are upper case; `and`/`or` are ordinary words.
    NOT always excludes from something: a query or group made only of exclusions
    (`NOT x`, `a OR NOT b`) is refused, because it would match nearly every paper.

Limits: MAX_LENGTH characters (checked first, so huge input costs nothing), MAX_TERMS
terms, MAX_DEPTH nested parentheses. Every error is a QueryError with a 0-based position.

The tree is normalized: an AND level keeps its included and excluded parts apart
(`a ANDNOT b AND c` == `a AND c ANDNOT b`), nested ANDs/ORs are flattened.
`format_query` prints the canonical string; parse -> format -> parse gives the same tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.errors import QueryError
from bot.matching.textnorm import words

MAX_LENGTH = 1000
MAX_TERMS = 50
MAX_DEPTH = 8
MIN_PREFIX = 2

FIELDS = frozenset({"ti", "abs", "au", "cat", "co", "jr", "all", "aff"})
DEFAULT_FIELD = "all"
OPERATORS = frozenset({"AND", "OR", "ANDNOT", "NOT"})
# A fixed, linear pattern (no user input in it): a run up to space, paren or quote.
_WORD = re.compile(r'[^\s()"]*')


@dataclass(frozen=True, slots=True)
class Term:
    """One searchable term: `value` as the user wrote it (quotes and `*` removed)."""

    field: str
    value: str
    quoted: bool = False
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class And:
    """All of `include` and none of `exclude` (exclude may be empty)."""

    include: tuple[Node, ...]
    exclude: tuple[Node, ...] = ()


@dataclass(frozen=True, slots=True)
class Or:
    items: tuple[Node, ...]


Node = Term | And | Or


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: str  # "(" ")" "op" "term" "group" (a `field:(` opener) "end"
    pos: int
    text: str = ""
    term: Term | None = None
    explicit: bool = False  # the term named its field (a group's field does not apply)


def parse_query(expr: str) -> Node:
    """Parse `expr` into a normalized tree, or raise QueryError (one line, position)."""
    if len(expr) > MAX_LENGTH:
        raise QueryError(f"query too long ({len(expr)} characters, max {MAX_LENGTH})", position=0)
    if not expr.strip():
        raise QueryError("empty query", position=0)
    return _Parser(_lex(expr)).parse()


def _lex(expr: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n, terms = 0, len(expr), 0
    while i < n:
        ch = expr[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "()":
            toks.append(_Tok(ch, i))
            i += 1
            continue
        start = i
        field = None
        if ch != '"':
            i = _word_end(expr, i)
            word = expr[start:i]
            colon = word.find(":")
            head = word[:colon]
            if word in OPERATORS:
                toks.append(_Tok("op", start, word))
                continue
            if colon > 0 and head.isascii() and head.isalpha():
                field = head.lower()
                if field not in FIELDS:
                    raise QueryError(f"unknown field '{head}:'", position=start)
                i = start + colon + 1
                while i < n and expr[i].isspace():
                    i += 1  # `ti: GRPO` is forgiven
                if i < n and expr[i] == "(":
                    toks.append(_Tok("group", start, field))
                    i += 1
                    continue
                if i >= n or expr[i] == ")" or expr[i : _word_end(expr, i)] in OPERATORS:
                    raise QueryError(f"expected a term after '{head}:'", position=i)
            else:
                i = start
        terms += 1
        if terms > MAX_TERMS:
            raise QueryError(f"too many terms (max {MAX_TERMS})", position=i)
        term, i = _read_term(expr, i, field or DEFAULT_FIELD)
        toks.append(_Tok("term", start, term=term, explicit=field is not None))
    toks.append(_Tok("end", n))
    return toks


def _word_end(expr: str, i: int) -> int:
    found = _WORD.match(expr, i)
    return found.end() if found else i


def _read_term(expr: str, i: int, field: str) -> tuple[Term, int]:
    if expr[i] == '"':
        close = expr.find('"', i + 1)
        if close < 0:
            raise QueryError("unclosed quote", position=i)
        value = " ".join(expr[i + 1 : close].split())
        if not value:
            raise QueryError("empty phrase", position=i)
        return Term(field, value, quoted=True), close + 1
    end = _word_end(expr, i)
    value = expr[i:end]
    prefix = value.endswith("*")
    if prefix:
        value = value[:-1]
    star = value.find("*")
    if star >= 0:
        raise QueryError("wildcard * only at the end of a word", position=i + star)
    return Term(field, value, prefix=prefix), end


def _checked(term: Term, pos: int) -> Term:
    """Refuse terms that could never match anything, naming where they are."""
    if term.field == "cat":
        value = term.value
        if not value or not all(c.isascii() and (c.isalnum() or c in ".-") for c in value):
            raise QueryError(f"invalid category '{value}'", position=pos)
        if term.prefix and len(value) < MIN_PREFIX:
            raise QueryError(f"wildcard needs {MIN_PREFIX} characters before *", position=pos)
        return term
    if term.field == "au" and term.prefix and not term.quoted and "_" in term.value:
        raise QueryError("wildcard * does not go with Surname_Initial", position=pos)
    found = words(term.value)
    if not found:
        raise QueryError("term has no letters or digits", position=pos)
    if term.prefix and len(found[-1]) < MIN_PREFIX:
        raise QueryError(f"wildcard needs {MIN_PREFIX} letters before *", position=pos)
    return term


class _Parser:
    def __init__(self, toks: list[_Tok]) -> None:
        self.toks = toks
        self.at = 0
        self.depth = 0

    def parse(self) -> Node:
        node = self.parse_or(DEFAULT_FIELD)
        tok = self.toks[self.at]
        if tok.kind == ")":
            raise QueryError("unexpected ')'", position=tok.pos)
        return node

    def peek(self) -> _Tok:
        return self.toks[self.at]

    def parse_or(self, field: str) -> Node:
        items = [self.parse_and(field)]
        while self.peek().kind == "op" and self.peek().text == "OR":
            self.at += 1
            items.append(self.parse_and(field, after="OR"))
        return make_or(items)

    def parse_and(self, field: str, after: str | None = None) -> Node:
        tok = self.peek()
        if tok.kind == "op" and tok.text in ("NOT", "ANDNOT"):
            raise QueryError(f"{tok.text} needs a term before it to exclude from", position=tok.pos)
        include = [self.parse_operand(field, after)]
        exclude: list[Node] = []
        while True:
            tok = self.peek()
            if tok.kind == "op" and tok.text != "OR":
                self.at += 1
                negate = tok.text in ("NOT", "ANDNOT")
                nxt = self.peek()
                if tok.text == "AND" and nxt.kind == "op" and nxt.text == "NOT":
                    self.at += 1
                    negate = True
                    tok = nxt
                (exclude if negate else include).append(self.parse_operand(field, tok.text))
            elif tok.kind in ("term", "(", "group"):
                include.append(self.parse_operand(field, None))
            else:
                return make_and(include, exclude)

    def parse_operand(self, field: str, after: str | None) -> Node:
        tok = self.peek()
        if tok.kind == "term" and tok.term is not None:
            self.at += 1
            term = tok.term
            if not tok.explicit and field != term.field:
                term = Term(field, term.value, term.quoted, term.prefix)
            return _checked(term, tok.pos)
        if tok.kind in ("(", "group"):
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise QueryError(f"too deeply nested (max {MAX_DEPTH} levels)", position=tok.pos)
            self.at += 1
            node = self.parse_or(tok.text if tok.kind == "group" else field)
            if self.peek().kind != ")":
                raise QueryError("unclosed parenthesis", position=tok.pos)
            self.at += 1
            self.depth -= 1
            return node
        where = f" after {after}" if after else ""
        raise QueryError(f"expected a term{where}", position=tok.pos)


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
    """The canonical string of a tree; parsing it gives the same tree back."""
    if isinstance(node, Term):
        if node.quoted:
            return f'{node.field}:"{node.value}"'
        return f"{node.field}:{node.value}{'*' if node.prefix else ''}"
    if isinstance(node, Or):
        return " OR ".join(format_query(item) for item in node.items)
    text = " AND ".join(_grouped(item, Or) for item in node.include)
    for item in node.exclude:
        text += " ANDNOT " + _grouped(item, (And, Or))
    return text


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
