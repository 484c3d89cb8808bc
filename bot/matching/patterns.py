"""What one term means against one paper: a parsed Term compiles to a Pattern, and
`pattern_matches` decides it on a PaperText.

Words, never substrings: phrases are consecutive words inside one segment (one title,
one author name, one affiliation). Authors are compared the way people write them:

- `au:wu`, `au:"Yi Wu"`: the last word is the surname, the words before it given names
  or initials, matched in order anywhere before the surname in ONE author;
- `au:del_maestro`: underscores join the words of one surname (`Del Maestro`), as on
  arXiv; a trailing `_A` (single letters) is an initial: `au:Del_Maestro_A`;
- `au:del_mae*`: the surname's last word is a prefix.

`id:` compares the arXiv id without version, `doi:` the DOI (both case-insensitive, a
trailing `*` a prefix); date ranges compare the paper's first or latest version's date
to the minute, in GMT. Every step here is linear in the paper's size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.errors import QueryError
from bot.matching.lexer import DATE_FIELDS, Term
from bot.matching.textnorm import PaperText, fold_category, words

MIN_PREFIX = 2
_OTHER_FIELDS = frozenset({"cat", "id", "doi", *DATE_FIELDS})  # not made of words
_DOI_LINKS = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/")
_ARXIV_ID = re.compile(r"(?:arxiv:)?([a-z0-9./-]+?)(?:v\d+)?", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Pattern:
    """A term as compared with a paper: folded words of one field.

    For `au:` the last `surname` words form the surname; the words before it are given
    names or initials, matched in order anywhere before the surname in ONE author.
    `prefix`: the last word is a prefix (`agent*`, `cat:cs.*`). Date ranges hold
    (first minute, last minute) as `YYYYMMDDHHMM` strings.
    """

    field: str
    words: tuple[str, ...]
    prefix: bool = False
    surname: int = 1


def check_term(term: Term, pos: int) -> Term:
    """Refuse terms that could never match anything, naming where they are."""
    field, value = term.field, term.value
    if field not in _OTHER_FIELDS:  # words: the common case, checked first
        underscored = field == "au" and "_" in value and not term.quoted
        surname = value.partition("_")[0] if underscored else "x"
        if not any(c.isalnum() for c in surname):  # `au:_Y`: an initial without a surname
            raise QueryError("an author's surname comes before the first _", position=pos)
        found_words = words(value)
        if not found_words:
            raise QueryError("term has no letters or digits", position=pos)
        if term.prefix and len(found_words[-1]) < MIN_PREFIX:
            raise QueryError(f"wildcard needs {MIN_PREFIX} letters before *", position=pos)
        return term
    if field in DATE_FIELDS:
        return term
    if field == "cat":
        if not value or not all(c.isascii() and (c.isalnum() or c in ".-") for c in value):
            raise QueryError(f"invalid category '{value}'", position=pos)
        found = value
    else:  # id, doi
        found = _identifier(term)
        if not found or any(c.isspace() for c in found):
            raise QueryError(f"invalid {field} '{value[:40]}'", position=pos)
    if term.prefix and len(found) < MIN_PREFIX:
        raise QueryError(f"wildcard needs {MIN_PREFIX} characters before *", position=pos)
    return term


def _identifier(term: Term) -> str:
    value = term.value.strip().lower()
    if term.field == "doi":
        for link in _DOI_LINKS:
            value = value.removeprefix(link)
        return value
    found = _ARXIV_ID.fullmatch(value)
    if found is None:
        return ""
    # `id:2301.01234v2` names the paper; a prefix keeps its digits (`id:2301.0123*`).
    return value.removeprefix("arxiv:") if term.prefix else found.group(1)


def compile_term(term: Term) -> Pattern:
    """The Pattern of a parsed Term (same semantics for the engine and the baseline)."""
    field = term.field
    if field == "cat":
        return Pattern("cat", (fold_category(term.value),), term.prefix)
    if field in DATE_FIELDS:
        first, _, last = term.value.partition(" TO ")
        return Pattern(field, (first, last))
    if field in ("id", "doi"):
        return Pattern(field, (_identifier(term),), term.prefix)
    if field == "au" and not term.quoted and "_" in term.value:
        return _author(term)
    return Pattern(field, tuple(words(term.value)), term.prefix)


def _author(term: Term) -> Pattern:
    """`Del_Maestro_A`: surname words joined by `_`, then initials (single letters)."""
    parts = [found for part in term.value.split("_") if (found := words(part))]
    initials: list[list[str]] = []
    if not term.prefix:  # `del_mae*`: every part is the surname, the last one a prefix
        while len(parts) > 1 and all(len(w) == 1 for w in parts[-1]):
            initials.insert(0, parts.pop())
    surname = [w for part in parts for w in part]
    given = [w for part in initials for w in part]
    return Pattern("au", (*given, *surname), term.prefix, len(surname))


def term_label(term: Term) -> str:
    """How a fired term is reported for highlighting: as written, `*` kept."""
    if term.field in DATE_FIELDS:
        first, _, last = term.value.partition(" TO ")
        return f"{term.field} {first[:8]}..{last[:8]}"
    return term.value + ("*" if term.prefix else "")


def pattern_matches(pattern: Pattern, text: PaperText) -> bool:
    """Whether the paper contains the pattern, word by word, inside one segment."""
    field, found = pattern.field, pattern.words
    if field == "cat":
        if pattern.prefix:
            return any(c.startswith(found[0]) for c in text.categories)
        return found[0] in text.category_keys
    if field in DATE_FIELDS:
        return found[0] <= text.stamp(field) <= found[1]
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
        return any(name_in(pattern, seg) for seg in text.segments("au"))
    if len(found) == 1:
        return True
    return any(phrase_at(seg, found, pattern.prefix, 0) >= 0 for seg in text.segments(field))


def phrase_at(seg: tuple[str, ...], found: tuple[str, ...], prefix: bool, start: int) -> int:
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


def name_in(pattern: Pattern, seg: tuple[str, ...]) -> bool:
    """Whether one author's words hold the surname, given names (or initials) in order
    before it. One pass: the given names are matched greedily as the surname's
    occurrences are met, so a 24,000-word name costs 24,000 steps, not their square."""
    cut = len(pattern.words) - pattern.surname
    given, surname = pattern.words[:cut], pattern.words[cut:]
    k = pos = 0
    at = phrase_at(seg, surname, pattern.prefix, 0)
    while at >= 0:
        while k < len(given) and pos < at:
            if same_name(given[k], seg[pos]):
                k += 1
            pos += 1
        if k == len(given):
            return True
        at = phrase_at(seg, surname, pattern.prefix, at + 1)
    return False


def same_name(wanted: str, word: str) -> bool:
    """`y` matches `yi` and `yi` matches `y` (initials); otherwise names are equal."""
    if wanted == word:
        return True
    return (len(wanted) == 1 and word.startswith(wanted)) or (
        len(word) == 1 and wanted.startswith(word)
    )


def pattern_cost(pattern: Pattern) -> int:
    """Guess how often a pattern matches (lower = rarer), to choose anchors."""
    if pattern.field in DATE_FIELDS:
        return 100_000  # a window of days holds thousands of papers
    if pattern.field == "cat":
        return 5000 if pattern.prefix else 1000
    if pattern.field in ("au", "id", "doi", "rn"):
        return 1
    if len(pattern.words) > 1:
        return 3
    return 300 if pattern.prefix else max(5, 40 - len(pattern.words[0]))
