"""The pattern index: which of all interned patterns one paper matches, exactly.

Every pattern is filed under one key that any paper it matches must have:

- a category (or a category prefix, `cat:cs.*`);
- a word of its field, or a word prefix (`agent*`);
- for a phrase, a pair of consecutive words of it (`("multi", "turn")`): papers list
  the pairs that start with a word some filed pair starts with, so a two-word phrase
  is decided by one lookup;
- for a name with given names, the (surname, initial) pair (`wu`, `y`), looked up from
  the paper's side only for the surnames filed (see PaperText.name_positions);
- date ranges have no key: the few distinct ones are checked on every paper.

A key either decides the pattern (`sure`: one word, one pair, one category, one
prefix in the pattern's own field, a surname with one initial or one given name) or
only makes it a candidate that `pattern_matches` verifies on the paper's words (longer
phrases, other names). Adding or removing a pattern touches only its own entry.

Per paper, each key space costs one C-level intersection of the paper's keys with the
filed keys (`dict.keys() & set`), and the ids found are gathered by C iterators: no
Python step per paper word.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable
from itertools import chain, compress, islice, pairwise

from bot.matching.lexer import DATE_FIELDS
from bot.matching.names import NameTable
from bot.matching.patterns import Pattern, pattern_matches
from bot.matching.textnorm import PaperText
from bot.matching.wordspace import PAIR_START, WordSpace, discard, file_id

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
            # One given name and a one-word surname: the name table decides it.
            sure = cut == 1 and pattern.surname == 1
            return NAMES, (found[cut], found[0]), False, sure
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


def _pair_keys(segments: tuple[tuple[str, ...], ...], firsts: Counter[str]) -> set[tuple[str, str]]:
    """The pairs of consecutive words, inside one segment, whose first word starts some
    filed pair: only those are built (by C iterators), not one tuple per word."""
    found: set[tuple[str, str]] = set()
    for seg in segments:
        starts = list(map(firsts.__contains__, seg))
        # The last word has no follower: the second iterator may stop one early.
        found.update(
            zip(compress(seg, starts), compress(islice(seg, 1, None), starts), strict=False)
        )
    return found


class PatternIndex:
    """Pattern ids filed by key (see the module docstring)."""

    def __init__(self) -> None:
        self._patterns: dict[int, Pattern] = {}
        self._words: dict[str, WordSpace] = {}  # field -> words and prefixes
        self._exact: dict[str, dict[Hashable, tuple[int, ...]]] = {}  # pairs, categories
        self._cat_prefix: dict[str, tuple[int, ...]] = {}  # `cat:cs.*`
        self._cat_cache: dict[str, tuple[int, ...]] = {}  # category -> its prefixes' ids
        self._unsure: set[int] = set()  # ids whose key only makes them candidates
        self._names = NameTable()
        self._scan: set[int] = set()  # date ranges, candidates on every paper

    def key_count(self) -> int:
        """How many distinct keys are filed (for diagnostics)."""
        exact = sum(len(table) for table in self._exact.values())
        words = sum(len(space.exact) + len(space.prefixes) for space in self._words.values())
        names = len(self._names)
        return exact + words + names + len(self._cat_prefix) + len(self._scan)

    def _file(self, pid: int, pattern: Pattern) -> tuple[str, Hashable, bool]:
        field, key, is_prefix, sure = index_key(pattern)
        if not sure:
            self._unsure.add(pid)
        return field, key, is_prefix

    def add(self, pid: int, pattern: Pattern) -> None:
        self._patterns[pid] = pattern
        field, key, is_prefix = self._file(pid, pattern)
        if field == SCAN:
            self._scan.add(pid)
        elif field == NAMES:
            self._names.add(pid, pattern)
        elif field == "cat" and is_prefix:
            assert isinstance(key, str)
            file_id(self._cat_prefix, key, pid)
            self._cat_cache = {}
        else:
            for space in _spaces(field):
                if space.endswith(_PAIRS) or space == "cat":
                    file_id(self._exact.setdefault(space, {}), key, pid)
                    if space != "cat":
                        assert isinstance(key, tuple)
                        words = self._words.setdefault(space[: -len(_PAIRS)], WordSpace())
                        words.add_first(key[0])
                else:
                    assert isinstance(key, str)
                    self._words.setdefault(space, WordSpace()).add(key, pid, is_prefix)

    def remove(self, pid: int) -> None:
        pattern = self._patterns.pop(pid)
        field, key, is_prefix = self._file(pid, pattern)
        self._unsure.discard(pid)
        if field == SCAN:
            self._scan.discard(pid)
        elif field == NAMES:
            self._names.remove(pid, pattern)
        elif field == "cat" and is_prefix:
            assert isinstance(key, str)
            discard(self._cat_prefix, key, pid)
            self._cat_cache = {}
        else:
            for space in _spaces(field):
                if space.endswith(_PAIRS) or space == "cat":
                    discard(self._exact[space], key, pid)
                    if not self._exact[space]:
                        del self._exact[space]
                    if space != "cat":
                        assert isinstance(key, tuple)
                        field = space[: -len(_PAIRS)]
                        self._words[field].remove_first(key[0])
                        if not self._words[field]:
                            del self._words[field]
                else:
                    assert isinstance(key, str)
                    self._words[space].remove(key, pid, is_prefix)
                    if not self._words[space]:
                        del self._words[space]

    def find(self, text: PaperText) -> set[int]:
        """Exactly the ids of the filed patterns the paper matches."""
        found: list[int] = []
        exact = self._exact
        done: list[str] = []  # pair spaces decided with their field's words
        for space, words in self._words.items():
            segments = text.segments(space)
            if len(segments) != 1:
                words.find(list(chain(*segments)), found)
                continue
            pair_space = space + _PAIRS
            table = exact.get(pair_space) if words.firsts else None
            if table is None:
                words.find(segments[0], found)
                continue
            pairs: list[tuple[str, str]] = []
            words.find(segments[0], found, pairs)
            found.extend(chain.from_iterable(map(table.__getitem__, table.keys() & pairs)))
            done.append(pair_space)
        for space, index in exact.items():
            if space not in done:
                keys = self._paper_keys(text, space)
                found.extend(chain.from_iterable(map(index.__getitem__, index.keys() & keys)))
        if self._cat_prefix:
            cache = self._cat_cache
            for category in text.categories:
                ids = cache.get(category)
                if ids is None:
                    ids = cache[category] = tuple(
                        pid
                        for prefix, pids in self._cat_prefix.items()
                        if category.startswith(prefix)
                        for pid in pids
                    )
                found += ids
        if self._names:
            self._names.find(text, found)
        true = set(found)
        true.discard(PAIR_START)
        true.update(self._scan)
        unsure = true.intersection(self._unsure)
        if unsure:
            true -= unsure
            patterns = self._patterns
            true.update([pid for pid in unsure if pattern_matches(patterns[pid], text)])
        return true

    def _paper_keys(self, text: PaperText, space: str) -> Iterable[Hashable]:
        if space == "cat":
            return text.category_keys
        field = space[: -len(_PAIRS)]
        return _pair_keys(text.segments(field), self._words[field].firsts)
