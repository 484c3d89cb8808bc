"""Extractive passages (pure): the one or two sentences of an abstract that best match a
question, with the question's words marked where they occur.

A sentence scores the idf of each distinct question stem it contains (plus a little per
repeat). The best one is kept, then the one adding the most weight of stems the first
lacks (if any), and both are shown in the abstract's order: together they cover as much
of the question as two sentences can. A paper found by its title or authors alone shows its first
sentence. Marks are (start, end) character offsets into the passage's own text, so each
medium highlights them its own way and escapes everything else.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from bot.ask.terms import word_spans

MAX_PASSAGE = 400  # characters per sentence shown
PER_PAPER = 2
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_LOOSE = re.compile(r"(?<=[.!?])\s+")
_ABBREVIATION_TEXT = (
    "e.g i.e et al vs cf fig figs eq eqs sec ref refs approx resp no nos dr prof st etc"
)
_ABBREVIATIONS = frozenset(_ABBREVIATION_TEXT.split())


@dataclass(frozen=True, slots=True)
class Passage:
    text: str
    marks: tuple[tuple[int, int], ...] = ()

    def segments(self) -> list[tuple[str, bool]]:
        """(text, marked) pieces in order: what a renderer escapes and highlights."""
        out: list[tuple[str, bool]] = []
        at = 0
        for start, end in self.marks:
            if start > at:
                out.append((self.text[at:start], False))
            out.append((self.text[start:end], True))
            at = end
        if at < len(self.text):
            out.append((self.text[at:], False))
        return out


def sentences(text: str, *, loose: bool = False) -> list[str]:
    """An abstract's sentences; abbreviations and initials do not end one. `loose` also
    ends a sentence before lower case or symbols (a model's output, not an abstract)."""
    text = " ".join(text.split())
    out, start = [], 0
    for found in (_LOOSE if loose else _BOUNDARY).finditer(text):
        before = text[start : found.start()].rsplit(" ", 1)[-1].rstrip(".!?").lower()
        if before in _ABBREVIATIONS or (len(before) == 1 and before.isalpha()):
            continue
        out.append(text[start : found.start()])
        start = found.end()
    if start < len(text):
        out.append(text[start:])
    return [s for s in out if s.strip()]


def mark(text: str, stems: frozenset[str]) -> Passage:
    """`text` (cut to MAX_PASSAGE at a word) with every word of `stems` marked."""
    if len(text) > MAX_PASSAGE:
        cut = text.rfind(" ", 0, MAX_PASSAGE - 1)
        text = text[: cut if cut > MAX_PASSAGE // 2 else MAX_PASSAGE - 1].rstrip(" ,;:") + "…"
    marks = tuple((s, e) for s, e, st in word_spans(text) if st in stems)
    return Passage(text, marks)


def _found(sentence: str, weights: Mapping[str, float]) -> list[str]:
    return [st for _, _, st in word_spans(sentence) if st in weights]


def _score(found: list[str], weights: Mapping[str, float], covered: frozenset[str]) -> float:
    fresh = set(found) - covered
    return sum(weights[st] for st in fresh) + (0.05 * len(found) if fresh else 0.0)


def best_passages(
    abstract: str, weights: Mapping[str, float], per_paper: int = PER_PAPER
) -> list[Passage]:
    """Up to `per_paper` marked sentences of `abstract`, in the abstract's order."""
    parts = sentences(abstract)
    if not parts:
        return []
    stems = frozenset(weights)
    found = [_found(s, weights) for s in parts]
    keep: list[int] = []
    covered: frozenset[str] = frozenset()
    for _ in range(per_paper):
        best = max(
            (i for i in range(len(parts)) if i not in keep),
            key=lambda i: (_score(found[i], weights, covered), -i),
            default=None,
        )
        if best is None or _score(found[best], weights, covered) <= 0:
            break
        keep.append(best)
        covered |= set(found[best])
    if not keep:
        return [mark(parts[0], stems)]
    return [mark(parts[i], stems) for i in sorted(keep)]


def mark_title(title: str, stems: frozenset[str]) -> Passage:
    """A title with the question's words marked (never cut)."""
    text = " ".join(title.split())
    return Passage(text, tuple((s, e) for s, e, st in word_spans(text) if st in stems))
