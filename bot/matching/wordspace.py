"""One field's words and word prefixes, and the cache that resolves a paper's words
to pattern ids (see bot.matching.index, which files patterns here).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import chain, compress, repeat
from operator import is_
from typing import TypeVar

from bot.matching.patterns import MIN_PREFIX

_CACHE_LIMIT = 200_000  # words remembered per field
PAIR_START = -1  # among a word's resolved ids: the word starts some filed pair


class WordSpace:
    """Pattern ids by word and by word prefix, for one field, behind a cache from each
    paper word met to every id it gives (exact and prefix): a paper's words resolve
    by one `dict.get` each, in C. Vocabularies are Zipf-skewed, so after a day almost
    every word was met before; a new word costs one Python step, once.

    The same lookup says which words start a filed pair of the field (`firsts`): their
    ids begin with PAIR_START, so a one-segment field's pairs come from the words'
    lookup, not from a second pass over its words."""

    __slots__ = ("exact", "firsts", "heads", "lengths", "prefixes", "resolved")

    def __init__(self) -> None:
        self.exact: dict[str, tuple[int, ...]] = {}
        self.prefixes: dict[str, tuple[int, ...]] = {}
        self.lengths: Counter[int] = Counter()
        # The prefixes' first two letters -> their lengths: a new word tries only those.
        self.heads: dict[str, Counter[int]] = {}
        self.resolved: dict[str, tuple[int, ...]] = {}
        self.firsts: Counter[str] = Counter()  # first words of the filed pairs

    def __len__(self) -> int:
        return len(self.exact) + len(self.prefixes) + len(self.firsts)

    def add_first(self, word: str) -> None:
        """Note that a filed pair of the field starts with `word`."""
        self.firsts[word] += 1
        self.resolved.pop(word, None)

    def remove_first(self, word: str) -> None:
        """Undo one `add_first`."""
        self.firsts[word] -= 1
        if not self.firsts[word]:
            del self.firsts[word]
            self.resolved.pop(word, None)

    def add(self, word: str, pid: int, is_prefix: bool) -> None:
        """File a pattern id under a word or, `is_prefix`, a word prefix."""
        if is_prefix:
            file_id(self.prefixes, word, pid)
            self.lengths[len(word)] += 1
            self.heads.setdefault(word[:MIN_PREFIX], Counter())[len(word)] += 1
            self.resolved = {}  # O(1): a fresh cache refills lazily
        else:
            file_id(self.exact, word, pid)
            self.resolved.pop(word, None)

    def remove(self, word: str, pid: int, is_prefix: bool) -> None:
        """Undo one `add`."""
        if is_prefix:
            discard(self.prefixes, word, pid)
            self.lengths[len(word)] -= 1
            head = self.heads[word[:MIN_PREFIX]]
            head[len(word)] -= 1
            head += Counter()
            if not head:
                del self.heads[word[:MIN_PREFIX]]
            self.lengths += Counter()  # drop lengths no prefix has
            self.resolved = {}
        else:
            discard(self.exact, word, pid)
            self.resolved.pop(word, None)

    def find(
        self, words: Sequence[str], into: list[int], pairs: list[tuple[str, str]] | None = None
    ) -> None:
        """Append the ids of the patterns some of the words match (with repeats, and
        PAIR_START); given `pairs`, append there the consecutive pairs of `words` (one
        segment) whose first word starts a filed pair."""
        resolved = self.resolved
        try:  # after a day or two, every word was met before
            found = list(map(resolved.__getitem__, words))
        except KeyError:
            if len(resolved) > _CACHE_LIMIT:
                resolved.clear()
            looked = list(map(resolved.get, words))
            for word in set(compress(words, map(is_, looked, repeat(None)))):
                resolved[word] = self._resolve(word)
            found = list(map(resolved.__getitem__, words))
        into.extend(chain.from_iterable(filter(None, found)))
        if pairs is not None:
            # Only the few words with ids are visited; the last one has no follower.
            for i in compress(range(len(words) - 1), found):
                if found[i][0] == PAIR_START:
                    pairs.append((words[i], words[i + 1]))

    def _resolve(self, word: str) -> tuple[int, ...]:
        table, size = self.prefixes, len(word)
        # Only the lengths of the prefixes starting as the word does (queries refuse
        # shorter prefixes; should one be filed anyway, every length is tried).
        lengths = self.heads.get(word[:MIN_PREFIX], ())
        if min(self.lengths, default=MIN_PREFIX) < MIN_PREFIX:
            lengths = self.lengths
        found = [pid for n in lengths if n <= size for pid in table.get(word[:n], ())]
        start = (PAIR_START,) if word in self.firsts else ()
        return (*start, *self.exact.get(word, ()), *found)


K = TypeVar("K", bound=Hashable)


def file_id(table: dict[K, tuple[int, ...]], key: K, pid: int) -> None:
    """File an id under a key: tuples, not sets (a key holds one or two ids, and a
    1-tuple takes 48 bytes where a set takes 216)."""
    table[key] = (*table.get(key, ()), pid)


def discard(table: dict[K, tuple[int, ...]], key: K, pid: int) -> None:
    """Unfile an id; a key left with none is dropped."""
    rest = tuple(i for i in table[key] if i != pid)
    if rest:
        table[key] = rest
    else:
        del table[key]
