"""Name patterns filed by surname, decided from the paper's authors without a scan
per pattern.

`au:Wu_Y` (one initial) and `au:"Yi Wu"` (one given name) are decided exactly here;
names with several given names or a surname of several words (`au:Del_Maestro_A`)
are only made candidates by their (surname, first initial) key and verified by
`pattern_matches`. The paper's side is asked only about the surnames filed, and each
author costs O(its words) (see PaperText.name_positions): a 24,000-word name stays
linear.

A given name matches a word before the surname that is the same name or its initial
(`Yi` matches `Yi` and `Y`; `Y` matches any word starting with `y`), as in
bot.matching.patterns.same_name.
"""

from __future__ import annotations

from itertools import chain
from typing import TypeVar

from bot.matching.patterns import Pattern
from bot.matching.textnorm import PaperText

Ids = set[int]


class NameTable:
    """surname -> initial -> ids, and surname -> initial -> given name -> ids."""

    __slots__ = ("_givens", "_initials")

    def __init__(self) -> None:
        self._initials: dict[str, dict[str, Ids]] = {}
        self._givens: dict[str, dict[str, dict[str, Ids]]] = {}

    def __bool__(self) -> bool:
        return bool(self._initials or self._givens)

    def __len__(self) -> int:
        initials = sum(len(table) for table in self._initials.values())
        givens = sum(len(g) for table in self._givens.values() for g in table.values())
        return initials + givens

    @staticmethod
    def _key(pattern: Pattern) -> tuple[str, str, str]:
        """(surname, initial, given name or "" when filed by initial only)."""
        found = pattern.words
        cut = len(found) - pattern.surname
        given = found[0]
        whole = cut == 1 and pattern.surname == 1 and len(given) > 1
        return found[cut], given[0], given if whole else ""

    def add(self, pid: int, pattern: Pattern) -> None:
        surname, initial, given = self._key(pattern)
        if given:
            table = self._givens.setdefault(surname, {}).setdefault(initial, {})
            table.setdefault(given, set()).add(pid)
        else:
            self._initials.setdefault(surname, {}).setdefault(initial, set()).add(pid)

    def remove(self, pid: int, pattern: Pattern) -> None:
        surname, initial, given = self._key(pattern)
        if given:
            by_initial = self._givens[surname]
            _drop(by_initial[initial], given, pid)
            if not by_initial[initial]:
                del by_initial[initial]
            if not by_initial:
                del self._givens[surname]
        else:
            _drop(self._initials[surname], initial, pid)
            if not self._initials[surname]:
                del self._initials[surname]

    def find(self, text: PaperText, found: list[int]) -> None:
        """Append the ids of the name patterns the paper's authors hold (candidates
        only, for the patterns filed by initial that need verifying)."""
        initials, givens = self._initials, self._givens
        words = text.tokens("au")
        surnames = (initials.keys() & words) | (givens.keys() & words)
        if not surnames:
            return
        for seg in text.segments("au"):
            if len(seg) == 2 and seg[1] in surnames:
                self._given_and_surname(seg[0], seg[1], found)
        for seg, last, first in text.name_positions(surnames, shortest=3):
            position: dict[str, int] = {}  # word -> first index, built once if needed
            for surname in surnames.intersection(last):  # iterates this author's words
                end = last[surname]
                by_initial = initials.get(surname)
                if by_initial is not None:
                    for ids in _before(by_initial, first, end):
                        found += ids
                given = givens.get(surname)
                if given is None:
                    continue
                for names in _before(given, first, end):
                    if not position:
                        for i, word in enumerate(seg):
                            position.setdefault(word, i)
                    _given_names(names, position, end, found)

    def _given_and_surname(self, given: str, surname: str, found: list[int]) -> None:
        """`find` for an author of two words (most are): only the second can be a
        surname with a word before it, and that word's initial is the only one."""
        initial = given[0]
        by_initial = self._initials.get(surname)
        if by_initial is not None:
            ids = by_initial.get(initial)
            if ids is not None:
                found += ids
        by_given = self._givens.get(surname)
        names = by_given.get(initial) if by_given is not None else None
        if names is None:
            return
        if len(given) == 1:  # `Y Wu` holds every given name starting with y
            found.extend(chain.from_iterable(names.values()))
        else:
            ids = names.get(given)
            if ids is not None:
                found += ids


T = TypeVar("T")


def _before(table: dict[str, T], first: dict[str, int], end: int) -> list[T]:
    """The entries of the initials that start a word before `end` (iterating the
    smaller of the two tables)."""
    if len(table) <= len(first):
        return [value for initial, value in table.items() if first.get(initial, end) < end]
    return [table[i] for i, start in first.items() if start < end and i in table]


def _given_names(
    names: dict[str, Ids], position: dict[str, int], end: int, found: list[int]
) -> None:
    """Given names (one initial) written before `end`: the name, or the initial alone."""
    initial = next(iter(names))[0]
    if position.get(initial, end) < end:  # `Y. Wu` holds every given name starting with y
        found.extend(chain.from_iterable(names.values()))
    elif len(names) <= len(position):
        for name, ids in names.items():
            if position.get(name, end) < end:
                found += ids
    else:
        for word, at in position.items():
            if at < end and word in names:
                found += names[word]


def _drop(table: dict[str, Ids], key: str, pid: int) -> None:
    table[key].discard(pid)
    if not table[key]:
        del table[key]
