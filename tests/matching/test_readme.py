"""The README's query-language section says what the code does: every query it shows
parses (or is refused, where it says so), and every "`x` is `y`" reads the same."""

from __future__ import annotations

import re

import pytest

from bot.errors import QueryError
from bot.matching.legacy import rewrite_legacy
from bot.matching.patterns import compile_term
from bot.matching.query import Node, Or, Term, check_query, parse_query
from tests.support.paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
SECTION = README[README.index("## The query language") : README.index("## How momentum")]
SAME = re.findall(r"`([^`]+)` (?:is|means|are) `([^`]+)`", SECTION)
REFUSED = ["`(ti:x`", "`au:`", "`a AND AND b`", '`au:""`', "`all:*`", "`all:ti:x`"]


def test_the_section_has_claims_to_check() -> None:
    assert len(SAME) >= 5


def _meaning(node: Node) -> object:
    """A tree with each term replaced by what it compiles to (`multi-turn` = `"multi turn"`)."""
    if isinstance(node, Term):
        return compile_term(node)
    if isinstance(node, Or):
        return ("OR", tuple(_meaning(n) for n in node.items))
    return ("AND", tuple(map(_meaning, node.include)), tuple(map(_meaning, node.exclude)))


@pytest.mark.parametrize(("first", "second"), SAME)
def test_each_equivalence_the_readme_states_holds(first: str, second: str) -> None:
    assert _meaning(parse_query(first)) == _meaning(parse_query(second))


def test_every_example_query_in_the_section_parses_or_is_refused_as_said() -> None:
    shown = re.findall(r"papertide query (?:check|test) '([^']+)'", SECTION)
    table = re.findall(r"^\| `([^`|]+:[^`|]*)`", SECTION, flags=re.MULTILINE)
    assert len(shown) >= 4
    assert len(table) >= 6
    for query in shown + table:
        if query.endswith(":"):
            continue  # a bare field name in the table, e.g. `ti:`
        check_query(query)
    for written in REFUSED:
        assert written in SECTION
        with pytest.raises(QueryError):
            check_query(written.strip("`"))


def test_the_upgrade_examples_are_what_migration_0004_writes() -> None:
    assert "`a b` becomes `all:a AND all:b`" in SECTION
    assert rewrite_legacy("a b") == "all:a AND all:b"
    assert '`au:Wu_Yi` becomes `au:"Yi Wu"`' in SECTION
    assert rewrite_legacy("au:Wu_Yi") == 'au:"Yi Wu"'
