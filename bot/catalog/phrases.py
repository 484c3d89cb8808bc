"""Phrases of paper text for emerging-topic detection: words, n-grams, stop words, and
how a phrase is shown and searched. Pure, no I/O.

A phrase is a tuple of 1 to 3 folded words (bot.matching.textnorm: the matcher's own
normalisation, so a phrase and the query suggested for it see the same words). A phrase
never starts or ends with a stop word, a number or a single character ("of the", "in
this paper" and "2" say nothing); a trigram may hold one inside ("chain of thought").
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import chain, pairwise
from typing import TypeAlias

from bot.matching.textnorm import fold, split_words

Phrase: TypeAlias = tuple[str, ...]
Segments: TypeAlias = tuple[list[str], list[str]]  # title words, abstract words

MAX_WORDS = 3

# English function words plus the boilerplate of abstracts: frequent everywhere, so
# never a theme of their own, and phrases that start or end with one are fragments.
STOP_WORDS = frozenset(
    """
    a about above across after again against all almost along already also although always
    am among an and another any are around as at be became because been before being below
    between both but by can cannot could did do does doing done down during each either
    else enough even ever every few for from further get gets given had has have having he
    her here hers him his how however i if in into is it its itself just least less let
    like made make makes many may me might more most much must my neither no nor not now of
    off often on once one only onto or other others otherwise our ours out over own per
    rather same several she should since so some such than that the their theirs them then
    there therefore these they this those though through thus to too toward towards two
    under until up upon us use used uses using very via was we well were what when where
    whether which while who whom whose why will with within without would yet you your
    paper papers propose proposed proposes present presents presented show shows shown
    study studies approach approaches method methods result results new novel work works
    based first second three demonstrate demonstrates existing recent recently furthermore
    moreover significantly significant respectively provide provides achieve achieves
    state art e g et al i e
    """.split()  # noqa: SIM905 - a word list reads better as text
)


def segments_of(title: str, abstract: str) -> Segments:
    """A paper's title and abstract as folded words; phrases never cross the two."""
    return split_words(fold(title)), split_words(fold(abstract))


def _can_end(word: str) -> bool:
    return len(word) > 1 and word not in STOP_WORDS and not word.isdigit()


def is_phrase(phrase: Phrase) -> bool:
    """Whether an n-gram may be a phrase: its ends are not stop words, numbers or letters."""
    return _can_end(phrase[0]) and _can_end(phrase[-1])


def paper_grams(segments: Segments) -> set[Phrase]:
    """Every 1-, 2- and 3-gram of a paper, once (a phrase counts once per paper), built
    in C (zip): filtering with `is_phrase` is left to the few that reach the minimum."""
    found: set[Phrase] = set()
    for w in segments:
        found.update(zip(w, strict=True), _longer(w))
    return found


def _longer(w: list[str]) -> Iterator[Phrase]:
    """The 2- and 3-grams of one segment."""
    return chain(pairwise(w), zip(w, w[1:], w[2:], strict=False))


def count_known(
    segments: Segments, words: set[str], longer: set[Phrase]
) -> tuple[set[str], set[Phrase]]:
    """Which of the known single `words` and `longer` phrases a paper holds. Only the
    intersection is kept, so nothing but the zip tuples is built per paper."""
    title, abstract = segments
    singles = words.intersection(chain(title, abstract)) if words else set()
    if not longer:
        return singles, set()
    grams = chain(_longer(title), _longer(abstract))
    return singles, longer.intersection(grams)


def sub_phrases(phrase: Phrase) -> Iterator[Phrase]:
    """The shorter contiguous phrases inside `phrase`."""
    n = len(phrase)
    for size in range(1, n):
        for start in range(n - size + 1):
            yield phrase[start : start + size]


_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 \-]*$")


def surface_form(phrase: Phrase, texts: Iterable[str]) -> str:
    """How papers write the phrase ('test-time scaling' for test/time/scaling): the most
    common spelling in `texts`, lower-cased; the words joined by spaces when none is found
    or the spelling holds anything but letters, digits, spaces and hyphens."""
    pattern = re.compile(
        r"(?<![^\W_])" + r"[\W_]{1,3}".join(map(re.escape, phrase)) + r"(?![^\W_])", re.IGNORECASE
    )
    seen: Counter[str] = Counter()
    for text in texts:
        seen.update(m.group(0).lower() for m in pattern.finditer(text))
    for form, _ in seen.most_common():
        if _PLAIN.match(form):
            return form
    return " ".join(phrase)


def suggested_query(form: str) -> str:
    """A query in papertide's language that finds the phrase in titles and abstracts."""
    term = f'"{form}"' if " " in form or "-" in form else form
    return f"ti:{term} OR abs:{term}"


def suggested_slug(form: str) -> str:
    """A catalog slug for the phrase: lowercase words joined by '-'."""
    return "-".join(split_words(fold(form))) or "emerging"
