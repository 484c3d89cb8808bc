"""arXiv's own cases of its classic query syntax, table-driven (tests/fixtures/arxiv_query).

Each line of the fixture is a query from arXiv's parser tests, its newer front end's
tests, its developers' notes on the live API or the API user manual. papertide must
give the recorded answer (canonical form or one-line error), and must read the query as
arXiv does, except where the line says why it does not (`differs`).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.errors import QueryError
from bot.matching.query import Node, Term, check_query, make_and, make_or, parse_query
from tests.support.paths import FIXTURES

CASES: list[dict[str, Any]] = json.loads(
    (FIXTURES / "arxiv_query" / "classic_cases.json").read_text(encoding="utf-8")
)


def _tree(phrase: list[Any]) -> Node:
    """arXiv's expected parse (`(Operator, Phrase, Phrase)` tuples) as papertide's tree."""
    head = phrase[0]
    if head == "AND":
        return make_and([_tree(phrase[1]), _tree(phrase[2])], [])
    if head == "OR":
        return make_or([_tree(phrase[1]), _tree(phrase[2])])
    if head == "ANDNOT":
        return make_and([_tree(phrase[1])], [_tree(phrase[2])])
    field, value = phrase
    if field == "submittedDate":  # arXiv quotes a range; papertide keeps its two ends
        return Term(field, value.strip('"'))
    if value.startswith('"'):
        return Term(field, value.strip('"'), quoted=True)
    return Term(field, value)


def _label(case: dict[str, Any]) -> str:
    return f"{case['origin'].rsplit('/', 1)[-1]}: {case['case']}: {case['query']}"


@pytest.mark.parametrize("case", CASES, ids=_label)
def test_arxiv_classic_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(QueryError) as caught:
            check_query(case["query"])
        assert str(caught.value) == case["error"]
        assert "\n" not in case["error"]
        if "differs" not in case:  # arXiv cannot run it either
            assert case.get("arxiv_refuses") or case.get("observed") in ("error", "no results")
        return
    checked = check_query(case["query"])
    assert checked.text == case["papertide"]
    assert parse_query(checked.text) == checked.node
    if "differs" in case:
        return
    assert not case.get("arxiv_refuses"), "arXiv refuses it: the line must say why we do not"
    if "arxiv_tree" in case:  # arXiv's parser test expects this very tree
        assert checked.node == _tree(case["arxiv_tree"])
    if "arxiv_query" in case:  # arXiv's front end rewrites it to a query meaning the same
        assert parse_query(case["arxiv_query"]) == checked.node


def test_the_table_covers_every_source_and_both_answers() -> None:
    origins = {case["origin"].rsplit("/", 1)[-1] for case in CASES}
    assert origins == {
        "test_classic_parser.py",
        "test_classic_search_query.py",
        "README_classic_search_query.md",
        "user-manual.md",
    }
    assert sum("error" in c for c in CASES) >= 20
    assert sum("papertide" in c for c in CASES) >= 50
    agree = [c for c in CASES if "differs" not in c and ("arxiv_tree" in c or "arxiv_query" in c)]
    assert len(agree) >= 15
