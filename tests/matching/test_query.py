"""The query language and text normalization: tables of cases, then properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.errors import QueryError
from bot.matching.query import (
    LOWER_CASE,
    MAX_DEPTH,
    MAX_LENGTH,
    MAX_TERMS,
    NO_REPORT_NUMBERS,
    OR_NOT,
    SIDE_BY_SIDE,
    Node,
    check_query,
    format_query,
    parse_query,
)
from bot.matching.textnorm import fold, latex_to_text, words

CANONICAL = [
    ('ti:GRPO AND abs:"multi-turn"', 'ti:GRPO AND abs:"multi-turn"'),
    ('au:"Yi Wu"', 'au:"Yi Wu"'),
    ("au:Wu_Y", "au:Wu_Y"),
    ("au:del_maestro", "au:del_maestro"),
    ("au:Del_Maestro_A", "au:Del_Maestro_A"),
    ("au:del_mae*", "au:del_mae*"),
    (
        "abs:(ALFWorld OR WebShop) ANDNOT cat:cs.CV",
        "(abs:ALFWorld OR abs:WebShop) ANDNOT cat:cs.CV",
    ),
    ("agent", "all:agent"),
    # Side by side is OR, as on arXiv.
    ("agent* cat:cs.*", "all:agent* OR cat:cs.*"),
    ("a (b c) (d OR e)", "all:a OR all:b OR all:c OR all:d OR all:e"),
    ("cat:(cs.AI OR cs.CL) au:Wu_Y", "cat:cs.AI OR cat:cs.CL OR au:Wu_Y"),
    ("co:accepted jr:Nature aff:Tsinghua", "co:accepted OR jr:Nature OR aff:Tsinghua"),
    ("a and b or c", "all:a OR all:and OR all:b OR all:or OR all:c"),
    # AND binds the term before it too; optional terms beside required ones only rank.
    ("a OR b AND c", "all:b AND all:c"),
    ("a OR b ANDNOT c AND d", "all:b AND all:d ANDNOT all:c"),
    ("a OR (b AND c)", "all:a OR (all:b AND all:c)"),
    ("(a OR b) AND c", "(all:a OR all:b) AND all:c"),
    ("(a OR b) ANDNOT c", "(all:a OR all:b) ANDNOT all:c"),
    ("a ANDNOT (b OR c)", "all:a ANDNOT all:b ANDNOT all:c"),
    ("a AND NOT b", "all:a ANDNOT all:b"),
    ("a NOT b", "all:a ANDNOT all:b"),
    ("a OR NOT b", "all:a ANDNOT all:b"),
    ("NOT a b", "all:b ANDNOT all:a"),
    ("a ANDNOT (b AND c)", "all:a ANDNOT (all:b AND all:c)"),
    ("((a))", "all:a"),
    ("TI:x", "ti:x"),
    ("ti: GRPO", "ti:GRPO"),
    ('abs:"  multi   turn "', 'abs:"multi turn"'),
    ("abs:(x OR ti:y)", "abs:x OR ti:y"),
    (r"ti:$\mu$P", r"ti:$\mu$P"),
    # arXiv's other fields.
    ("id:2301.01234v2", "id:2301.01234v2"),
    ("ID:hep-th/9901001", "id:hep-th/9901001"),
    ('doi:"10.1002/(SICI)1097-4571"', 'doi:"10.1002/(SICI)1097-4571"'),
    ("doi:10.1038/*", "doi:10.1038/*"),
    ("rn:CERN-TH-2020-001", "rn:CERN-TH-2020-001"),
    ("submittedDate:[2023 TO 2024]", "submittedDate:[202301010000 TO 202412312359]"),
    ('submitteddate:"202302 TO 202302"', "submittedDate:[202302010000 TO 202302282359]"),
    (
        "lastUpdatedDate:[202301010600 TO 202401010600]",
        "lastUpdatedDate:[202301010600 TO 202401010600]",
    ),
]


@pytest.mark.parametrize(("expr", "canonical"), CANONICAL)
def test_queries_print_canonically_and_round_trip(expr: str, canonical: str) -> None:
    node = parse_query(expr)
    assert format_query(node) == canonical
    assert parse_query(canonical) == node


HINTS = [
    ("ti:(space time)", SIDE_BY_SIDE),
    ("a b AND c", SIDE_BY_SIDE),
    ("ti:(space and time)", LOWER_CASE),
    ("a OR NOT b", OR_NOT),
    ("rn:CERN", NO_REPORT_NUMBERS),
    ("a OR b AND c", "as on arXiv, `all:a` beside AND changes nothing and is left out"),
    ("a b AND c", "as on arXiv, `all:a` beside AND"),
]


@pytest.mark.parametrize(("expr", "hint"), HINTS)
def test_readings_that_surprise_come_with_a_hint(expr: str, hint: str) -> None:
    assert any(h.startswith(hint) for h in check_query(expr).hints)


def test_explicit_queries_need_no_hint() -> None:
    assert check_query('(ti:space AND ti:time) OR abs:"space time"').hints == ()


ERRORS = [
    ('ti:GRPO AND abs:"multi-turn', "unclosed quote at 16"),
    ("ti:GRPO AND ", "expected a term after AND at 12"),
    ("ti:GRPO OR", "expected a term after OR at 10"),
    ("a AND OR b", "expected a term after AND at 6"),
    ("foo:bar", "unknown field 'foo:' at 0"),
    ("x AND foo:(a)", "unknown field 'foo:' at 6"),
    ("NOT x", "NOT needs a term to exclude from (alone it matches nothing) at 0"),
    ("ANDNOT x", "ANDNOT needs a term before it to exclude from at 0"),
    ("a OR (NOT b)", "NOT needs a term to exclude from (alone it matches nothing) at 6"),
    ("a (NOT b)", "NOT needs a term to exclude from (alone it matches nothing) at 3"),
    ("a NOT NOT b", "expected a term after NOT at 6"),
    ("a ANDNOT NOT b", "expected a term after ANDNOT at 9"),
    ("AND x", "AND needs a term before it at 0"),
    ("a)", "unexpected ')' at 1"),
    ("(a", "unclosed parenthesis at 0"),
    ("()", "expected a term at 1"),
    ("ti:", "expected a term after 'ti:' at 3"),
    ("ti: AND x", "expected a term after 'ti:' at 4"),
    ("ti:pineapple AND au:", "expected a term after 'au:' at 20"),
    ('all:ti:"pineapple"', "'ti:' cannot follow 'all:' at 4"),
    ("ag*ent", "wildcard * only at the end of a word at 2"),
    ("*", "a term cannot start with a wildcard * at 0"),
    ("ti:*agent", "a term cannot start with a wildcard * at 3"),
    ("te?t", "wildcard ? is not supported: put * at the end of a word at 0"),
    ("matrix^5", "^ boosts and ~ fuzzy or proximity search are not supported at 6"),
    ('"a b"~3', "^ boosts and ~ fuzzy or proximity search are not supported at 5"),
    ("a*", "wildcard needs 2 letters before * at 0"),
    ("cat:c*", "wildcard needs 2 characters before * at 0"),
    ("cat:cs/AI", "invalid category 'cs/AI' at 0"),
    ("id:2301.01234!", "invalid id '2301.01234!' at 0"),
    ("doi:", "expected a term after 'doi:' at 4"),
    ('""', "empty phrase at 0"),
    ("ti:---", "term has no letters or digits at 0"),
    ("au:_Y", "an author's surname comes before the first _ at 0"),
    ("au:---", "term has no letters or digits at 0"),
    (
        "submittedDate:2023",
        "submittedDate: takes a range like [202301010600 TO 202401010600] at 14",
    ),
    ("submittedDate:[2023 TO", "unclosed [ at 14"),
    (
        "submittedDate:[2023 2024]",
        "submittedDate: takes a range like [202301010600 TO 202401010600] at 14",
    ),
    ("submittedDate:[202313 TO 2024]", "invalid date '202313' at 14"),
    ("submittedDate:[20231 TO 2024]", "invalid date '20231': write YYYYMMDD[HHMM] at 14"),
    ("submittedDate:[2024 TO 2023]", "the date range ends before it starts at 14"),
    ("", "empty query at 0"),
    ("   ", "empty query at 0"),
]


@pytest.mark.parametrize(("expr", "message"), ERRORS)
def test_malformed_queries_say_what_and_where_in_one_line(expr: str, message: str) -> None:
    with pytest.raises(QueryError) as caught:
        parse_query(expr)
    assert str(caught.value) == message
    assert "\n" not in str(caught.value)
    assert caught.value.position is not None


def test_limits_are_explicit() -> None:
    with pytest.raises(QueryError, match=f"query too long \\(1001 characters, max {MAX_LENGTH}\\)"):
        parse_query("a" * 1001)
    many = " OR ".join(f"w{i}" for i in range(MAX_TERMS + 1))
    with pytest.raises(QueryError, match=f"too many terms \\(max {MAX_TERMS}\\)"):
        parse_query(many)
    parse_query(" OR ".join(f"w{i}" for i in range(MAX_TERMS)))
    deep = "(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1)
    with pytest.raises(QueryError, match=f"too deeply nested \\(max {MAX_DEPTH} levels\\)"):
        parse_query(deep)
    parse_query("(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH)


class _Untouchable(str):
    """A string that fails if anything but its length is looked at."""

    def _touched(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("the parser read the text of an over-long query")

    __getitem__ = __iter__ = __contains__ = strip = split = find = _touched  # type: ignore[assignment]


def test_100_kb_is_refused_from_its_length_alone() -> None:
    huge = _Untouchable('"' + "(" * 100_000)
    with pytest.raises(QueryError, match="query too long \\(100001 characters"):
        parse_query(huge)


NORMALIZED = [
    ("Çağatan", ["cagatan"]),
    ("Straße ØRSTED Łukasz", ["strasse", "orsted", "lukasz"]),
    ("multi-turn", ["multi", "turn"]),
    ("URL, CURL and RL_x", ["url", "curl", "and", "rl", "x"]),
    (r"$\mu$P and $\alpha$", ["μp", "and", "α"]),
    (r"\emph{Multi-Turn} agents", ["multi", "turn", "agents"]),
    (r"Schr\"odinger and G\"{o}del", ["schrodinger", "and", "godel"]),
    (r"\c{C}a\u{g}atan \ss{} \o", ["cagatan", "ss", "o"]),
    ("GPT-4o (v3.5)", ["gpt", "4o", "v3", "5"]),
    ("ｆｕｌｌｗｉｄｔｈ", ["fullwidth"]),
]


@pytest.mark.parametrize(("text", "expected"), NORMALIZED)
def test_text_folds_to_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_latex_becomes_text_and_case_and_accents_fold() -> None:
    assert latex_to_text(r"A \textbf{bold} $\beta$-VAE \& more") == "A bold β-VAE & more"
    assert fold("Éric GARCÍA") == "eric garcia"


QUERY_ALPHABET = st.sampled_from(
    [
        "a", "bc", "GRPO", "multi-turn", "agent*", " ", " ", "(", ")", '"', ":", "*", "-",
        "AND", "OR", "ANDNOT", "NOT", "ti:", "abs:", "au:", "cat:", "cs.*", "Wu_Y", "foo:",
        "é", "\\mu", "$", "_", "\t", "\u00a0",
    ]
)  # fmt: skip


def _round_trips(expr: str) -> None:
    try:
        node: Node = parse_query(expr)
    except QueryError as exc:
        error = exc
    else:
        printed = format_query(node)
        assert parse_query(printed) == node
        assert format_query(parse_query(printed)) == printed
        return
    assert error.position is not None
    assert "\n" not in str(error)


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_unicode_gives_a_query_or_a_query_error(expr: str) -> None:
    _round_trips(expr)


@settings(max_examples=600, deadline=None)
@given(st.lists(QUERY_ALPHABET, max_size=30).map(" ".join))
def test_query_like_input_round_trips(expr: str) -> None:
    _round_trips(expr)


@settings(max_examples=300, deadline=None)
@given(st.lists(QUERY_ALPHABET, max_size=30).map("".join))
def test_glued_query_like_input_round_trips(expr: str) -> None:
    _round_trips(expr)
