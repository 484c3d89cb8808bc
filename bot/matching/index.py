"""The pattern index: which of all interned patterns one paper matches, exactly.

Every pattern is filed under one key that any paper it matches must have:

- a category (or a category prefix, `cat:cs.*`);
- a word of its field, or a word prefix (`agent*`);
- for a phrase, a pair of consecutive words of it (`("multi", "turn")`): papers list
  the word pairs of each segment, so a two-word phrase is decided by one lookup;
- for a name with a given name, the (surname, initial) pair (`wu`, `y`), looked up
  from the paper's side only for the surnames filed (see PaperText.name_positions);
- date ranges have no key: the few distinct ones are checked on every paper.

A key either decides the pattern (`sure`: one word, one pair, one category, one
prefix in the pattern's own field) or only makes it a candidate that
`pattern_matches` verifies on the paper's words (longer phrases, names). Adding or
removing a pattern touches only its own entry; nothing is rebuilt.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from itertools import pairwise
from typing import TypeVar

from bot.matching.lexer import DATE_FIELDS
from bot.matching.patterns import Pattern, pattern_matches
from bot.matching.textnorm import PaperText

_PREFIX_CACHE_LIMIT = 200_000
NAMES = "au:name"  # the key space of (surname, first initial) pairs
SCAN = "scan"  # date ranges: no key, checked on every paper
_PAIRS = ":pairs"  # suffix of the key spaces of consecutive word pairs ("ti:pairs")


def index_key(pattern: Pattern) -> tuple[str, Hashable, bool, bool]:
    """Where to file a pattern: (key space, key, is_prefix, sure).

    `sure`: a paper that has the key matches the pattern, no verification needed.
    The space is a field (`all` stands for two, see `_spaces`), `cat` or NAMES.
    """
    field, found = pattern.field, pattern.words
    if field == "cat":
        return field, found[0], pattern.prefix, True
    if field in DATE_FIELDS:
        return SCAN, found, False, False
    verify = False
    if field == "au":
        cut = len(found) - pattern.surname
        if cut and not pattern.prefix:
            return NAMES, (found[cut], found[0][0]), False, False
        found, verify = found[cut:], cut > 0  # given names are checked on the paper
    exact = found[:-1] if pattern.prefix else found
    if len(exact) > 1:
        # The longest pair of consecutive words: longer words are rarer.
        pair = max(pairwise(exact), key=lambda p: len(p[0]) + len(p[1]))
        return field + _PAIRS, pair, False, not verify and len(found) == 2
    if exact:
        return field, exact[0], False, not verify and len(found) == 1
    return field, found[-1], True, not verify and len(found) == 1


def _spaces(space: str) -> tuple[str, ...]:
    """The key spaces a pattern is filed in: `all` (title or abstract) in both the
    title's and the abstract's, so each paper word is looked up once, not twice."""
    if space.startswith("all"):
        return ("ti" + space[3:], "abs" + space[3:])
    return (space,)


def _paper_keys(text: PaperText, space: str) -> frozenset[Hashable]:
    if space == "cat":
        return text.category_keys
    if space.endswith(_PAIRS):
        return text.pairs(space[: -len(_PAIRS)])
    return text.tokens(space)


class _PrefixTable:
    """Pattern ids by word prefix, for one key space; paper words resolve through a
    cache (vocabularies are Zipf-skewed, so most words of a paper were seen before)."""

    __slots__ = ("cache", "lengths", "table")

    def __init__(self) -> None:
        self.table: dict[str, set[int]] = {}
        self.lengths: Counter[int] = Counter()
        self.cache: dict[str, tuple[int, ...]] = {}

    def add(self, prefix: str, pid: int) -> None:
        self.table.setdefault(prefix, set()).add(pid)
        self.lengths[len(prefix)] += 1
        self.cache = {}  # O(1): a fresh cache refills lazily

    def remove(self, prefix: str, pid: int) -> None:
        _discard(self.table, prefix, pid)
        self.lengths[len(prefix)] -= 1
        self.lengths += Counter()  # drop lengths no prefix has
        self.cache = {}

    def find(self, paper_words: Iterable[str], into: list[int]) -> None:
        """Append the ids of the patterns whose prefix starts some of the words."""
        cache, table, lengths = self.cache, self.table, self.lengths
        if len(cache) > _PREFIX_CACHE_LIMIT:
            cache.clear()
        for word in paper_words:
            found = cache.get(word)
            if found is None:
                found = cache[word] = tuple(
                    pid for n in lengths if n <= len(word) for pid in table.get(word[:n], ())
                )
            into += found


K = TypeVar("K", bound=Hashable)


def _name_key(key: Hashable) -> tuple[str, str]:
    assert isinstance(key, tuple)
    return key[0], key[1]


def _discard(table: dict[K, set[int]], key: K, pid: int) -> None:
    table[key].discard(pid)
    if not table[key]:
        del table[key]


class PatternIndex:
    """Pattern ids filed by key (see the module docstring)."""

    def __init__(self) -> None:
        self._patterns: dict[int, Pattern] = {}
        self._exact: dict[str, dict[Hashable, set[int]]] = {}  # space -> key -> ids
        self._prefix: dict[str, _PrefixTable] = {}  # space -> prefixes
        self._unsure: set[int] = set()  # ids whose key only makes them candidates
        self._names: dict[str, dict[str, set[int]]] = {}  # surname -> initial -> ids
        self._scan: set[int] = set()  # date ranges, candidates on every paper

    def key_count(self) -> int:
        """How many distinct keys are filed (for diagnostics)."""
        exact = sum(len(table) for table in self._exact.values())
        names = sum(len(initials) for initials in self._names.values())
        prefixes = sum(len(table.table) for table in self._prefix.values())
        return exact + names + prefixes + len(self._scan)

    def add(self, pid: int, pattern: Pattern) -> None:
        self._patterns[pid] = pattern
        field, key, is_prefix, sure = index_key(pattern)
        if not sure:
            self._unsure.add(pid)
        if field == SCAN:
            self._scan.add(pid)
            return
        if field == NAMES:
            surname, initial = _name_key(key)
            self._names.setdefault(surname, {}).setdefault(initial, set()).add(pid)
            return
        for space in _spaces(field):
            if is_prefix:
                assert isinstance(key, str)
                self._prefix.setdefault(space, _PrefixTable()).add(key, pid)
            else:
                self._exact.setdefault(space, {}).setdefault(key, set()).add(pid)

    def remove(self, pid: int) -> None:
        pattern = self._patterns.pop(pid)
        self._unsure.discard(pid)
        field, key, is_prefix, _ = index_key(pattern)
        if field == SCAN:
            self._scan.discard(pid)
            return
        if field == NAMES:
            surname, initial = _name_key(key)
            _discard(self._names[surname], initial, pid)
            if not self._names[surname]:
                del self._names[surname]
            return
        for space in _spaces(field):
            if is_prefix:
                assert isinstance(key, str)
                self._prefix[space].remove(key, pid)
            else:
                _discard(self._exact[space], key, pid)

    def find(self, text: PaperText) -> set[int]:
        """Exactly the ids of the filed patterns the paper matches."""
        found: list[int] = []
        for space, index in self._exact.items():
            for key in index.keys() & _paper_keys(text, space):
                found += index[key]
        for space, table in self._prefix.items():
            table.find(text.categories if space == "cat" else text.tokens(space), found)
        if self._names:
            self._find_names(text, found)
        true = set(found)
        true.update(self._scan)
        unsure = true.intersection(self._unsure)
        if unsure:
            true -= unsure
            patterns = self._patterns
            true.update([pid for pid in unsure if pattern_matches(patterns[pid], text)])
        return true

    def _find_names(self, text: PaperText, found: list[int]) -> None:
        """Name patterns whose (surname, initial) key the paper has: the surname occurs
        in an author after a word with that initial. Linear in the authors' words."""
        names = self._names
        surnames = names.keys() & text.tokens("au")
        if not surnames:
            return
        for last, first in text.name_positions(surnames):
            for surname in surnames.intersection(last):  # iterates this author's words
                end = last[surname]
                for initial, ids in names[surname].items():
                    start = first.get(initial)
                    if start is not None and start < end:
                        found += ids
