"""`fold` and `words` fold only the non-ASCII runs of a text and split its UTF-8 bytes;
they must give exactly what folding and splitting the whole text gives (the reference
implementations below), on text made to be awkward: combining marks in every order,
ligatures, full-width forms, case folding that changes length, non-ASCII separators,
lone surrogates, LaTeX."""

from __future__ import annotations

import random
import re
import unicodedata

import pytest

from bot.matching.textnorm import _fold_table, fold, latex_to_text, split_words, words

_WORD = re.compile(r"[^\W_]+")


def _fold_whole(text: str) -> str:
    """fold() as it was: NFKD, case folding and the fold table over the whole text."""
    text = latex_to_text(text)
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKD", text).casefold().translate(_fold_table())


def _words_whole(text: str) -> list[str]:
    return _WORD.findall(_fold_whole(text))


_PIECES = [
    *"aZ09 -_.,;:'\"()[]/\\{}$~\t\n",
    *"éÉèçÇñÑüÖßẞøØđłıðþæŒħŧŋİ",  # precomposed, and letters NFKD keeps whole
    "e\u0301", "o\u0308\u0304", "\u0345\u0301", "\u0301\u0345", "a\u0316\u0301\u0345",
    *"ΣσςΑαμΩ", "ﬁ", "ﬃ", "Ａ", "！", "ｚ", "²", "½", "Ⅻ", "٣", "中文", "한국어",
    "\u13a0", "\uab70", "\u2013", "\u2014", "\u2019", "\u00a0", "\u2003", "\u200d",
    "\u00b7", "\ud800", "\U0001f600", "\u1e9e", "Ǆ", "ǅ", "\u0130",
    r"$\mu$", r"\"o", r"\ss", r"\emph{x}", r"\alpha-", "~", r"\&", "{", "}",
]  # fmt: skip


@pytest.mark.parametrize("seed", range(20))
def test_fold_and_words_equal_the_whole_text_reference(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 40)))
        assert fold(text) == _fold_whole(text), repr(text)
        assert words(text) == _words_whole(text), repr(text)
        assert split_words(fold(text)) == words(text), repr(text)


def test_awkward_cases_by_hand() -> None:
    assert words('Schr\\"odinger $\\mu$P Ａ–ﬁ ΣΑΣ') == ["schrodinger", "μp", "a", "fi", "σασ"]
    assert words("Çağatan\u00a0Straße\u2014ok") == ["cagatan", "strasse", "ok"]
    assert words("x\ud800y") == ["x", "y"]  # a lone surrogate separates, never raises
    assert fold("A\u0345\u0301b") == _fold_whole("A\u0345\u0301b")
