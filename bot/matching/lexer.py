"""The query language's tokens: operators, parentheses, fields, terms and date ranges.

One left-to-right pass over the text, each character read a bounded number of times.
Refuses, with a position, what arXiv cannot run (an unclosed quote, a field with no
value, a term that starts with a wildcard) and the Lucene extras papertide does not
implement (`?` wildcards, `^` boosts, `~` fuzzy or proximity search).

`legacy=True` reads text the way the grammar before revision 0004 did (no such
refusals), for bot.matching.legacy.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.errors import QueryError

MAX_TERMS = 50
DEFAULT_FIELD = "all"
DATE_FIELDS = frozenset({"submittedDate", "lastUpdatedDate"})
FIELDS = frozenset(
    {"ti", "abs", "au", "cat", "co", "jr", "all", "aff", "id", "doi", "rn", *DATE_FIELDS}
)
_BY_LOWER = {name.lower(): name for name in FIELDS}  # field names are case-insensitive
OPERATORS = frozenset({"AND", "OR", "ANDNOT", "NOT"})
# A fixed, linear pattern (no user input in it): a run up to space, paren or quote.
_WORD = re.compile(r'[^\s()"]*')
_LUCENE_SUFFIX = re.compile(r"[~^][\d.]*\Z")  # `word~`, `word~0.8`, `"a b"~3`, `x^2`
_SPECIAL = re.compile(r"\A\*|[~^?]")  # what the line above and _read_term refuse
_DATE_LENGTHS = (4, 6, 8, 12)
_RANGE = "{field}: takes a range like [202301010600 TO 202401010600]"


@dataclass(frozen=True, slots=True)
class Term:
    """One searchable term: `value` as the user wrote it (quotes and `*` removed).

    Date ranges keep `value` as `YYYYMMDDHHMM TO YYYYMMDDHHMM` (GMT, both ends in).
    """

    field: str
    value: str
    quoted: bool = False
    prefix: bool = False


@dataclass(frozen=True, slots=True)
class Tok:
    kind: str  # "(" ")" "op" "term" "group" (a `field:(` opener) "end"
    pos: int
    text: str = ""
    term: Term | None = None
    explicit: bool = False  # the term named its field (a group's field does not apply)


def lex(expr: str, *, legacy: bool = False) -> list[Tok]:
    """The tokens of `expr`, ending with an "end" token; QueryError with a position."""
    toks: list[Tok] = []
    i, n, terms = 0, len(expr), 0
    while i < n:
        ch = expr[i]
        if ch.isspace():
            i += 1
            continue
        if ch in "()":
            toks.append(Tok(ch, i))
            i += 1
            continue
        start = i
        field = None
        if ch != '"':
            i = word_end(expr, i)
            word = expr[start:i]
            if word in OPERATORS:
                toks.append(Tok("op", start, word))
                continue
            colon = word.find(":")
            head = word[:colon]
            if colon > 0 and head.isascii() and head.isalpha():
                field = _BY_LOWER.get(head.lower())
                if field is None:
                    raise QueryError(f"unknown field '{head}:'", position=start)
                i = start + colon + 1
                while i < n and expr[i].isspace():
                    i += 1  # `ti: GRPO` is forgiven
                if i < n and expr[i] == "(" and field not in DATE_FIELDS:
                    toks.append(Tok("group", start, field))
                    i += 1
                    continue
                value = expr[i : word_end(expr, i)]
                if i >= n or expr[i] == ")" or value in OPERATORS:
                    raise QueryError(f"expected a term after '{head}:'", position=i)
                if ":" in value and not legacy:
                    inner = value.partition(":")[0]
                    if inner.isascii() and inner.lower() in _BY_LOWER:
                        raise QueryError(f"'{inner}:' cannot follow '{head}:'", position=i)
            else:
                i = start
        terms += 1
        if terms > MAX_TERMS:
            raise QueryError(f"too many terms (max {MAX_TERMS})", position=i)
        if field in DATE_FIELDS:
            term, i = _read_range(expr, i, field)
        else:
            term, i = _read_term(expr, i, field or DEFAULT_FIELD, legacy)
        toks.append(Tok("term", start, term=term, explicit=field is not None))
    toks.append(Tok("end", n))
    return toks


def word_end(expr: str, i: int) -> int:
    """Where the run of non-space, non-paren, non-quote characters from `i` ends."""
    found = _WORD.match(expr, i)
    return found.end() if found else i


def _read_term(expr: str, i: int, field: str, legacy: bool) -> tuple[Term, int]:
    if expr[i] == '"':
        close = expr.find('"', i + 1)
        if close < 0:
            raise QueryError("unclosed quote", position=i)
        value = " ".join(expr[i + 1 : close].split())
        if not value:
            raise QueryError("empty phrase", position=i)
        end = close + 1
        if not legacy and end < len(expr) and expr[end] in "~^":
            raise _lucene_extra(end)
        return Term(field, value, quoted=True), end
    end = word_end(expr, i)
    value = expr[i:end]
    if not legacy and _SPECIAL.search(value):  # one scan on the common path
        if value.startswith("*"):
            raise QueryError("a term cannot start with a wildcard *", position=i)
        extra = _LUCENE_SUFFIX.search(value)
        if extra:
            raise _lucene_extra(i + extra.start())
        if "?" in value:
            raise QueryError("wildcard ? is not supported: put * at the end of a word", position=i)
    prefix = value.endswith("*")
    if prefix:
        value = value[:-1]
    star = value.find("*")
    if star >= 0:
        raise QueryError("wildcard * only at the end of a word", position=i + star)
    return Term(field, value, prefix=prefix), end


def _lucene_extra(at: int) -> QueryError:
    return QueryError("^ boosts and ~ fuzzy or proximity search are not supported", position=at)


def _read_range(expr: str, i: int, field: str) -> tuple[Term, int]:
    """`[A TO B]` (arXiv's documented form) or `"A TO B"`: dates as YYYY[MM[DD[HHMM]]]."""
    opener = expr[i]
    closer = {"[": "]", '"': '"'}.get(opener)
    close = expr.find(closer, i + 1) if closer else -1
    if close < 0:
        if closer:
            raise QueryError(f"unclosed {opener}", position=i)
        raise QueryError(_RANGE.format(field=field), position=i)
    parts = expr[i + 1 : close].split()
    if len(parts) != 3 or parts[1] != "TO":
        raise QueryError(_RANGE.format(field=field), position=i)
    start, end = _when(parts[0], i, first=True), _when(parts[2], i, first=False)
    if start > end:
        raise QueryError("the date range ends before it starts", position=i)
    return Term(field, f"{start} TO {end}"), close + 1


def _when(text: str, pos: int, *, first: bool) -> str:
    """YYYY, YYYYMM, YYYYMMDD or YYYYMMDDHHMM as 12 digits: the range's first or last minute."""
    if not (text.isascii() and text.isdigit() and len(text) in _DATE_LENGTHS):
        raise QueryError(f"invalid date '{text[:20]}': write YYYYMMDD[HHMM]", position=pos)
    year = int(text[:4])
    month = int(text[4:6]) if len(text) > 4 else (1 if first else 12)
    try:
        last_day = calendar.monthrange(year, month)[1] if 1 <= month <= 12 else 0
        day = int(text[6:8]) if len(text) > 6 else (1 if first else last_day)
        stamp = text[8:12] if len(text) > 8 else ("0000" if first else "2359")
        datetime(year, month, day, int(stamp[:2]), int(stamp[2:]), tzinfo=UTC)
    except ValueError as exc:
        raise QueryError(f"invalid date '{text}'", position=pos) from exc
    return f"{year:04d}{month:02d}{day:02d}{stamp}"
