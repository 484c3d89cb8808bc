"""Words as retrieval sees them: folded, stop words dropped, stemmed.

Papers and questions pass through the same functions, so ranking and highlighting in
Python agree with each other; the engines (FTS5 `porter`, PostgreSQL `english`) stem on
their own side, close enough that a term the engine matched is the term we highlight.
"""

from __future__ import annotations

import re

import Stemmer

from bot.matching.textnorm import fold, split_words

# Function words (PostgreSQL's and Snowball's English lists, which the engines drop or
# would rank as noise) and the words people use to ask about papers rather than to say
# what they want: "which papers use X, and what do they report?" asks about X.
_STOP_TEXT = """
    a about above after again against ain all also am an and any are aren as at be because
    been before being below between both but by can couldn d did didn do does doesn doing
    don down during each etc few for from further had hadn has hasn have haven having he her
    here hers herself him himself his how i if in into is isn it its itself just ll m ma me
    mightn more most mustn my myself needn no nor not now o of off on once only or other our
    ours ourselves out over own re s same shan she should shouldn so some such t than that
    the their theirs them themselves then there these they this those through to too under
    until up ve very was wasn we were weren what when where which while who whom why will
    with won would wouldn y you your yours yourself yourselves
    anyone anything could get gets give tell know let like may might many much must one
    ones please say says said shall something whether whose via within without
    paper papers article articles work works publication publications preprint preprints
    research researchers study studies find found findings show shows shown report reports
    reported reporting describe describes described discuss discusses mention mentions
    use uses used using recent recently new latest topic topics arxiv
"""
STOP_WORDS = frozenset(_STOP_TEXT.split())
MIN_WORD = 2  # single letters say nothing ("a", "x"); "rl", "llm", "3d" do
_STEMMER = Stemmer.Stemmer("english")
_WORD_IN_TEXT = re.compile(r"[^\W_]+")


_STEMS: dict[str, str] = {}
_MAX_STEMS = 1 << 18


def stem(word: str) -> str:
    """The stem of one folded word (`training` -> `train`); cached: vocabularies repeat."""
    found = _STEMS.get(word)
    if found is None:
        if len(_STEMS) >= _MAX_STEMS:
            _STEMS.clear()  # crude but bounded; refilled by the next few papers
        found = _STEMS[word] = str(_STEMMER.stemWord(word))
    return found


def content_words(text: str) -> list[str]:
    """The folded words of `text` that carry meaning, in order (duplicates kept)."""
    return [w for w in split_words(fold(text)) if len(w) >= MIN_WORD and w not in STOP_WORDS]


def stems_of(text: str) -> list[str]:
    """Every word of `text` as a stem (stop words too: they count toward a field's length).

    The hot loop of indexing and ranking, so it stays in C: new words are stemmed once
    (a set difference finds them), then every word maps through the cache.
    """
    words = split_words(fold(text))
    missing = set(words).difference(_STEMS)
    if missing:
        if len(_STEMS) + len(missing) > _MAX_STEMS:
            _STEMS.clear()  # crude but bounded; refilled by the next few papers
            missing = set(words)
        _STEMS.update(zip(missing, _STEMMER.stemWords(list(missing)), strict=True))
    return list(map(_STEMS.__getitem__, words))


def word_spans(text: str) -> list[tuple[int, int, str]]:
    """(start, end, stem) of every word of raw `text`, for highlighting in place."""
    spans = []
    for found in _WORD_IN_TEXT.finditer(text):
        folded = fold(found.group())
        # A folded word can split ("Straße" stays one; "x_1" is two regex matches already).
        spans.append((found.start(), found.end(), stem(folded.replace(" ", ""))))
    return spans
