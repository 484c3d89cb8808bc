"""Text as the matcher sees it: LaTeX as text, accents folded, case folded, words.

Papers and queries pass through the same functions, so whatever a user types is
compared with what a paper says on equal terms:

- LaTeX becomes text: `$\\mu$` -> `μ`, `\\emph{x}` -> `x`, `\\"o` -> `o`, `\\ss` -> `ss`.
- Accents are folded (NFKD, combining marks dropped) and case is folded:
  `Çağatan` -> `cagatan`, `Straße` -> `strasse`.
- A word is a maximal run of letters and digits; everything else (spaces, hyphens,
  punctuation, underscores) separates words. So `multi-turn` and `multi turn` are the
  same two words, and `RL` is never found inside `URL`.

Only fixed, linear regular expressions are used here; user input is never compiled.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_left
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from datetime import UTC
from functools import cache, lru_cache

from bot.types import PaperRecord

# \name (letters) or \<one other character>; a letter command may swallow one space.
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+|.)", re.DOTALL)
_WORD = re.compile(r"[^\W_]+")
# In ASCII text the words are the runs of [A-Za-z0-9]: every other character becomes a
# space and str.split finds the same words as _WORD, about twice as fast.
_ASCII_SEPARATORS = str.maketrans({chr(c): " " for c in range(128) if not chr(c).isalnum()})
_BYTE_SEPARATORS = bytes(c if c > 127 or chr(c).isalnum() else 32 for c in range(256))
_NON_ASCII_RUN = re.compile(r"([^\x00-\x7f]+)")

_GREEK = {
    name: chr(code)
    for name, code in (
        ("alpha", 0x3B1), ("beta", 0x3B2), ("gamma", 0x3B3), ("delta", 0x3B4),
        ("epsilon", 0x3B5), ("varepsilon", 0x3B5), ("zeta", 0x3B6), ("eta", 0x3B7),
        ("theta", 0x3B8), ("vartheta", 0x3B8), ("iota", 0x3B9), ("kappa", 0x3BA),
        ("lambda", 0x3BB), ("mu", 0x3BC), ("nu", 0x3BD), ("xi", 0x3BE), ("pi", 0x3C0),
        ("varpi", 0x3C0), ("rho", 0x3C1), ("varrho", 0x3C1), ("sigma", 0x3C3),
        ("varsigma", 0x3C2), ("tau", 0x3C4), ("upsilon", 0x3C5), ("phi", 0x3C6),
        ("varphi", 0x3C6), ("chi", 0x3C7), ("psi", 0x3C8), ("omega", 0x3C9),
        ("Gamma", 0x393), ("Delta", 0x394), ("Theta", 0x398), ("Lambda", 0x39B),
        ("Xi", 0x39E), ("Pi", 0x3A0), ("Sigma", 0x3A3), ("Upsilon", 0x3A5),
        ("Phi", 0x3A6), ("Psi", 0x3A8), ("Omega", 0x3A9),
    )
}  # fmt: skip
# Letters LaTeX spells as commands.
_LETTERS = {
    "ss": "ss", "o": "o", "O": "O", "ae": "ae", "AE": "AE", "oe": "oe", "OE": "OE",
    "aa": "a", "AA": "A", "l": "l", "L": "L", "i": "i", "j": "j", "dh": "d", "th": "th",
}  # fmt: skip
# Accent commands: the accent is folded away anyway, so the command just disappears.
_ACCENT_WORDS = frozenset({"c", "v", "u", "H", "k", "r", "d", "b", "t", "G", "U"})
_ACCENT_MARKS = frozenset("\"'`^~=.")


class _FoldTable(dict[int, "str | int | None"]):
    """Combining marks dropped, every other code point kept: `str.translate`'s table.

    Filled as code points are met (`__missing__` runs once per distinct code point), so
    no process pays for walking all 1.1M code points up front (~70 ms, more under load:
    a fifth of a 2,000-paper ingest's time when the table was built whole)."""

    def __missing__(self, code: int) -> str | int | None:
        value = None if unicodedata.combining(chr(code)) else code
        self[code] = value
        return value


@cache
def _fold_table() -> _FoldTable:
    table = _FoldTable()
    # Letters NFKD leaves whole but people write without the stroke.
    for source, target in (
        ("ø", "o"), ("đ", "d"), ("ł", "l"), ("ı", "i"), ("ð", "d"), ("þ", "th"),
        ("æ", "ae"), ("œ", "oe"), ("ħ", "h"), ("ŧ", "t"), ("ŋ", "n"),
    ):  # fmt: skip
        table[ord(source)] = target
    return table


_LATEX_DROP = (("{", ""), ("}", ""), ("$", ""), ("~", " "))


def _replace_command(found: re.Match[str]) -> str:
    name = found.group(1)
    if name in _GREEK:
        return _GREEK[name]
    if name in _LETTERS:
        return _LETTERS[name]
    if name in _ACCENT_WORDS or name in _ACCENT_MARKS:
        return ""
    if name == "\\" or name.isspace():
        return " "
    if len(name) == 1 and not name.isalpha():
        return name  # \& \% \_ \$ \{ … stand for the character itself
    return ""  # \emph, \textbf, \mathrm…: keep the argument, drop the command


def latex_to_text(text: str) -> str:
    """LaTeX markup as plain text: commands resolved, math `$` and braces removed."""
    if "\\" in text:
        text = _LATEX_COMMAND.sub(_replace_command, text)
    # Most text has none of these. str.replace, not str.translate: once `$\\mu$` made
    # the text non-ASCII, translate looks up every character in Python (~75 µs a paper).
    for char, replacement in _LATEX_DROP:
        if char in text:
            text = text.replace(char, replacement)
    return text


def fold(text: str) -> str:
    """LaTeX resolved, accents stripped, case folded: the form every comparison uses."""
    text = latex_to_text(text)
    if text.isascii():
        return text.lower()
    return "".join(_fold_runs(text, _fold_run))


@lru_cache(maxsize=1 << 12)
def _fold_run(run: str) -> str:
    """fold() of a run of non-ASCII characters (see `_fold_runs`)."""
    text = unicodedata.normalize("NFKD", run).casefold()
    return text.translate(_fold_table())


@lru_cache(maxsize=1 << 12)
def _word_run(run: str) -> str:
    """A folded run of non-ASCII characters with every non-ASCII character that is not
    a letter or digit (a dash, a quote, a space) made a space: split-ready."""
    folded = _fold_run(run)
    if folded.isascii():
        return folded
    return "".join([c if c.isascii() or c.isalnum() else " " for c in folded])


def _fold_runs(text: str, fold_run: Callable[[str], str]) -> list[str]:
    """The text, cut around its runs of non-ASCII characters, ASCII lowered and each run
    folded. The same as folding the whole text: NFKD, case folding and the fold table
    act on each character alone, but for the canonical reordering of combining marks,
    which never crosses an ASCII character. Text is mostly ASCII, so only the few runs
    pay for Unicode work (`str.translate` looks each character up in Python)."""
    parts = _NON_ASCII_RUN.split(text)  # even: ASCII, odd: non-ASCII runs
    parts[::2] = map(str.lower, parts[::2])
    parts[1::2] = map(fold_run, parts[1::2])
    return parts


def split_words(folded: str) -> list[str]:
    """The words of already folded text (letters and digits; all else separates)."""
    if folded.isascii():
        return folded.translate(_ASCII_SEPARATORS).split()
    return _WORD.findall(folded)


def words(text: str) -> list[str]:
    """The folded words of raw text: `Multi-Turn $\\mu$P` -> ['multi', 'turn', 'μ', 'p'].

    `split_words(fold(text))`, without a Python step per character when the text is not
    ASCII: the runs are folded split-ready (`_word_run`), then the ASCII separators are
    made spaces in the UTF-8 bytes (a byte table, in C; no non-ASCII character has a
    byte below 128) and `str.split` cuts at them.
    """
    text = latex_to_text(text)
    if text.isascii():
        return text.lower().translate(_ASCII_SEPARATORS).split()
    joined = "".join(_fold_runs(text, _word_run))
    return joined.encode().translate(_BYTE_SEPARATORS).decode().split()


@lru_cache(maxsize=1 << 16)
def _short_words(text: str) -> tuple[str, ...]:
    """`words` of a name or an affiliation: the same ones recur on many papers."""
    return tuple(words(text))


def fold_category(category: str) -> str:
    """arXiv categories compare case-insensitively: `cs.AI` -> `cs.ai`."""
    return category.strip().lower()


class PaperText:
    """A paper's searchable fields as folded words, each field computed on first use.

    A field is a tuple of segments (word tuples): one for the title, one per author
    name, one per affiliation… Phrases and names never match across two segments.
    """

    __slots__ = (
        "_categories",
        "_keys",
        "_record",
        "_segments",
        "_sorted",
        "_tokens",
    )

    def __init__(self, record: PaperRecord) -> None:
        self._record = record
        self._segments: dict[str, tuple[tuple[str, ...], ...]] = {}
        self._tokens: dict[str, frozenset[str]] = {}
        self._categories: tuple[str, ...] | None = None
        self._keys: frozenset[str] | None = None
        self._sorted: dict[str, list[str]] = {}

    @property
    def paper_id(self) -> str:
        return self._record.id

    def segments(self, field: str) -> tuple[tuple[str, ...], ...]:
        found = self._segments.get(field)
        if found is None:
            found = self._segments[field] = self._build(field)
        return found

    def tokens(self, field: str) -> frozenset[str]:
        """Every word of a field (all its segments together)."""
        found = self._tokens.get(field)
        if found is None:
            found = self._tokens[field] = frozenset().union(*self.segments(field))
        return found

    def has_prefix(self, field: str, prefix: str) -> bool:
        """Whether some word of the field starts with `prefix` (binary search)."""
        ordered = self._sorted.get(field)
        if ordered is None:
            ordered = self._sorted[field] = sorted(self.tokens(field))
        at = bisect_left(ordered, prefix)
        return at < len(ordered) and ordered[at].startswith(prefix)

    @property
    def categories(self) -> tuple[str, ...]:
        if self._categories is None:
            self._categories = tuple(fold_category(c) for c in self._record.categories)
        return self._categories

    @property
    def category_keys(self) -> frozenset[str]:
        """Categories and their archives: `cs.ai` gives `cs.ai` and `cs`."""
        if self._keys is None:
            cats = self.categories
            self._keys = frozenset(cats).union(c.split(".", 1)[0] for c in cats)
        return self._keys

    def name_positions(
        self, surnames: AbstractSet[str], shortest: int = 2
    ) -> list[tuple[tuple[str, ...], dict[str, int], dict[str, int]]]:
        """For each author of `shortest` words or more holding one of `surnames`: its words,
        where each word last occurs and where each initial first occurs. `Yi Wu` has the name key
        (`wu`, `y`) because `y` starts a word before the last `wu`. Asked only about the
        surnames an index holds, a name of n words costs O(n), never one key per pair of
        its words."""
        found = []
        for seg in self.segments("au"):
            if len(seg) >= shortest and not surnames.isdisjoint(seg):
                last = {word: i for i, word in enumerate(seg)}
                first: dict[str, int] = {}
                for i, word in enumerate(seg):
                    first.setdefault(word[0], i)
                found.append((seg, last, first))
        return found

    def stamp(self, field: str) -> str:
        """`submittedDate` (first version) or `lastUpdatedDate` as YYYYMMDDHHMM, GMT."""
        when = self._record.published if field == "submittedDate" else self._record.updated
        return when.astimezone(UTC).strftime("%Y%m%d%H%M")

    def _build(self, field: str) -> tuple[tuple[str, ...], ...]:
        paper = self._record
        if field == "all":
            return self.segments("ti") + self.segments("abs")
        if field == "au":
            return tuple(_short_words(a.name) for a in paper.authors)
        if field == "aff":
            return tuple(_short_words(x) for a in paper.authors for x in a.affiliations)
        if field == "id":
            return ((paper.id.lower(),),)
        if field == "doi":
            return ((paper.doi.strip().lower(),),) if paper.doi.strip() else ()
        if field == "rn":
            return ()  # no source papertide reads carries report numbers
        text = {
            "ti": paper.title,
            "abs": paper.abstract,
            "co": paper.comment,
            "jr": paper.journal_ref,
        }[field]
        return (tuple(words(text)),)
