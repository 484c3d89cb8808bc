"""arXiv's author-list grammar: a table of real, awkward author lines.

The lines are arXiv's own test cases of its author parser (arXiv/arxiv-base
`arxiv/util/tests/test_authors.py`, see tests/fixtures/arxiv/real/README.md) and the
`dc:creator` examples of arXiv's feed documentation. Where papertide reads a line
differently from arXiv's parser, the case says why.
"""

from __future__ import annotations

import pytest

from bot.ingest.sources.arxiv_authors import parse_authors
from bot.types import Author

QUAD = (
    "QUaD collaboration: S. Gupta (1), P. Ade (1), J. Bock (2,3), M. Bowden "
    "(1,4), M. L. Brown (5), G. Cahill (6), P. G. Castro (7,8), S. Church (4), T. "
    "Culverhouse (9), R. B. Friedman (9), K. Ganga (10), W. K. Gear (1), J. "
    "Hinderks (5,11), J. Kovac (3), A. E. Lange (4), E. Leitch (2,3), S. J. "
    "Melhuish (12), Y. Memari (7), J. A. Murphy (6), A. Orlando (1,3), C. "
    "O'Sullivan (6), L. Piccirillo (12), C. Pryke (9), N. Rajguru (1,13), B. "
    "Rusholme (4,14), R. Schwarz (9), A. N. Taylor (7), K. L. Thompson (4), A. H. "
    "Turner (1), E. Y. S. Wu (4), M. Zemcov (1,2,3) ((1) Cardiff University, (2) "
    "JPL, (3) Caltech, (4) Stanford University, (5) University of Cambridge, (6) "
    "National University of Ireland Maynooth, (7) University of Edinburgh, (8) "
    "Universidade Tecnica de Lisboa, (9) University of Chicago, (10) Laboratoire "
    "APC/CNRS, (11) NASA Goddard, (12) University of Manchester, (13) UCL, (14) "
    "IPAC) "
)
_CARDIFF, _JPL, _CALTECH, _STANFORD = (
    "Cardiff University", "JPL", "Caltech", "Stanford University")  # fmt: skip
_CAMBRIDGE, _MAYNOOTH, _EDINBURGH = (
    "University of Cambridge", "National University of Ireland Maynooth",
    "University of Edinburgh")  # fmt: skip
_CHICAGO, _MANCHESTER = "University of Chicago", "University of Manchester"
QUAD_AUTHORS = [
    ("QUaD collaboration", ()),
    ("S. Gupta", (_CARDIFF,)), ("P. Ade", (_CARDIFF,)), ("J. Bock", (_JPL, _CALTECH)),
    ("M. Bowden", (_CARDIFF, _STANFORD)), ("M. L. Brown", (_CAMBRIDGE,)),
    ("G. Cahill", (_MAYNOOTH,)),
    ("P. G. Castro", (_EDINBURGH, "Universidade Tecnica de Lisboa")),
    ("S. Church", (_STANFORD,)), ("T. Culverhouse", (_CHICAGO,)),
    ("R. B. Friedman", (_CHICAGO,)), ("K. Ganga", ("Laboratoire APC/CNRS",)),
    ("W. K. Gear", (_CARDIFF,)), ("J. Hinderks", (_CAMBRIDGE, "NASA Goddard")),
    ("J. Kovac", (_CALTECH,)), ("A. E. Lange", (_STANFORD,)), ("E. Leitch", (_JPL, _CALTECH)),
    ("S. J. Melhuish", (_MANCHESTER,)), ("Y. Memari", (_EDINBURGH,)),
    ("J. A. Murphy", (_MAYNOOTH,)), ("A. Orlando", (_CARDIFF, _CALTECH)),
    ("C. O'Sullivan", (_MAYNOOTH,)), ("L. Piccirillo", (_MANCHESTER,)),
    ("C. Pryke", (_CHICAGO,)), ("N. Rajguru", (_CARDIFF, "UCL")),
    ("B. Rusholme", (_STANFORD, "IPAC")), ("R. Schwarz", (_CHICAGO,)),
    ("A. N. Taylor", (_EDINBURGH,)), ("K. L. Thompson", (_STANFORD,)),
    ("A. H. Turner", (_CARDIFF,)), ("E. Y. S. Wu", (_STANFORD,)),
    ("M. Zemcov", (_CARDIFF, _JPL, _CALTECH)),
]  # fmt: skip

PAPER_2106_08865 = (
    r"E. Trigueros P\'aez (1 and 2) and R. H. Barb\'a (3) and I. Negueruela (1) "
    r"and J. Ma\'iz Apell\'aniz (2) and S. Sim\'on-D\'iaz (4 and 5) and G.Holgado (2) "
    r"((1) Departamento de F\'isica Aplicada - Universidad de Alicante, (2) "
    r"Centro de Astrobiolog\'ia - CSIC-INTA, (3) Departamento de Astronom\'ia - Universidad "
    r"de La Serena, (4) Instituto de Astrof\'isica de Canarias, (5) Departamento "
    r"de Astrof\'isica - Universidad de La Laguna)"
)
_ALICANTE = r"Departamento de F\'isica Aplicada - Universidad de Alicante"
_CAB = r"Centro de Astrobiolog\'ia - CSIC-INTA"

CASES: list[tuple[str, str, list[tuple[str, tuple[str, ...]]]]] = [
    # (case, dc:creator line, [(name, affiliations), ...])
    ("feed docs example", "Antonin Monteil, Paul Pegon",
     [("Antonin Monteil", ()), ("Paul Pegon", ())]),
    ("one author", "Simeon Warner", [("Simeon Warner", ())]),
    ("empty", "", []),
    ("prefixed surname", "Simeon Warner, Herbert Van de Sompel",
     [("Simeon Warner", ()), ("Herbert Van de Sompel", ())]),
    ("collaboration and et al", "The DELPHI Collaboration, J. Abdallah, et al",
     [("The DELPHI Collaboration", ()), ("J. Abdallah", ())]),
    ("collaboration with a colon", "BELLE Collaboration: A Person, Nother Person",
     [("BELLE Collaboration", ()), ("A Person", ()), ("Nother Person", ())]),
    ("suffix after a comma",
     "John Von Neumann, Herbert Van de Sompel, Fred Bloggs, Jr, et al",
     [("John Von Neumann", ()), ("Herbert Van de Sompel", ()), ("Fred Bloggs Jr", ())]),
    ("'and' between names (1110.4366)", "Matthew Everitt, Robert M. Heath and Viv Kendon",
     [("Matthew Everitt", ()), ("Robert M. Heath", ()), ("Viv Kendon", ())]),
    ("'Jr' that is a first name", "Anatoly Zlotnik and Jr-Shin Li",
     [("Anatoly Zlotnik", ()), ("Jr-Shin Li", ())]),
    ("affiliation with untidy spaces", "sum won ( whatever affil  data   unmunged  )",
     [("sum won", ("whatever affil data unmunged",))]),
    ("affiliation with a comma is one affiliation", "sum won (lab a, lab b)",
     [("sum won", ("lab a, lab b",))]),
    ("affiliation with a semicolon", "sum won (lab a; lab b)",
     [("sum won", ("lab a; lab b",))]),
    ("numbered, spaced", "sum won (1,2) ( (1) lab a, (2) lab b)",
     [("sum won", ("lab a", "lab b"))]),
    ("numbered, packed", "sum won(1,2)((1)lab a,(2)lab b)",
     [("sum won", ("lab a", "lab b"))]),
    ("each author's own affiliation", "a.b.first (affil), c.d.second (affil)",
     [("a.b.first", ("affil",)), ("c.d.second", ("affil",))]),
    ("nested groups that are no numbered list", "sum won ((lab a), (lab b))",
     [("sum won", ())]),
    ("QUaD: numbered affiliations shared by many authors", QUAD, QUAD_AUTHORS),
    ("'and' inside numbers and between names (2106.08865)", PAPER_2106_08865, [
        (r"E. Trigueros P\'aez", (_ALICANTE, _CAB)),
        (r"R. H. Barb\'a", (r"Departamento de Astronom\'ia - Universidad de La Serena",)),
        ("I. Negueruela", (_ALICANTE,)),
        (r"J. Ma\'iz Apell\'aniz", (_CAB,)),
        (r"S. Sim\'on-D\'iaz", (r"Instituto de Astrof\'isica de Canarias",
                                r"Departamento de Astrof\'isica - Universidad de La Laguna")),
        ("G.Holgado", (_CAB,)),
    ]),
    # arXiv's parser copies an affiliation back to the authors before it that have none
    # ("An Author and Another P. H. J. Author (affil)" gives both "affil"): that is how a
    # submitter's author line reads. The feed writes each author's list as resolved by that
    # parser (arxiv-feed __add_authors), so there an author without a group has none.
    ("no copying back (arXiv's parser copies)", "An Author and Another P. H. J. Author (affil)",
     [("An Author", ()), ("Another P. H. J. Author", ("affil",))]),
    ("no copying back, numbered (arXiv's parser copies)",
     "a.b.first, c.d.second (1), e.f.third, g.h.forth (2,3) ((1) affil1, (2) affil2, (3) affil3)",
     [("a.b.first", ()), ("c.d.second", ("affil1",)), ("e.f.third", ()),
      ("g.h.forth", ("affil2", "affil3"))]),
    # The shape of the report: affiliations with commas after every name.
    ("arxiv-feed's own writing", "Andrew Gould (Dept. of Astronomy, Ohio State), "
     "B. Scott Gaudi (CfA), Andrzej Udalski (Warsaw University Observatory)",
     [("Andrew Gould", ("Dept. of Astronomy, Ohio State",)), ("B. Scott Gaudi", ("CfA",)),
      ("Andrzej Udalski", ("Warsaw University Observatory",))]),
    ("an unclosed group is no part of a name", "Ann Lee (MIT, Bo Wu",
     [("Ann Lee", ("MIT, Bo Wu",))]),
    ("a stray closing parenthesis", "Ann Lee), Bo Wu", [("Ann Lee", ()), ("Bo Wu", ())]),
]  # fmt: skip


@pytest.mark.parametrize(("line", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_author_lines_give_each_author_their_affiliations(
    line: str, expected: list[tuple[str, tuple[str, ...]]]
) -> None:
    assert parse_authors(line) == tuple(Author(name, affs) for name, affs in expected)


def test_a_line_of_24000_words_is_one_long_name_read_in_one_pass() -> None:
    # The cost is one pass over the separators; normalize() then bounds the name.
    (author,) = parse_authors(" ".join(["word"] * 24_000))
    assert author.name.count("word") == 24_000
