"""The compiled engine: what matches (words, names, categories), why, and that it
agrees with the straightforward per-query baseline on every paper."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.matching.engine import MatchEngine
from bot.matching.query import parse_query, topic_query
from bot.matching.terms import fired_terms
from bot.matching.textnorm import PaperText
from bot.types import Author, Match, MatchKind, PaperRecord
from tests.support.match_corpus import Vocabulary, generate_alert, generate_papers, generate_topic

NOW = datetime(2026, 7, 1, tzinfo=UTC)


def paper(
    title: str = "A paper",
    abstract: str = "",
    authors: tuple[str, ...] = ("Ann Author",),
    categories: tuple[str, ...] = ("cs.LG",),
    **extra: Any,
) -> PaperRecord:
    affiliations = extra.pop("affiliations", ())
    return PaperRecord(
        id=extra.pop("id", "2607.00001"),
        version=1,
        title=title,
        abstract=abstract,
        authors=tuple(Author(name, tuple(affiliations)) for name in authors),
        categories=categories,
        published=NOW,
        updated=NOW,
        source="test",
        **extra,
    )


def engine_fires(expr: str, record: PaperRecord) -> tuple[str, ...] | None:
    engine = MatchEngine()
    engine.add_alert(1, expr)
    found = engine.match(record)
    baseline = fired_terms(parse_query(expr), PaperText(record))
    assert (found[0].terms if found else None) == baseline, "engine and baseline disagree"
    return baseline


GRPO = paper(
    title="GRPO for Multi-Turn LLM Agents",
    abstract="We train agents on ALFWorld. The URL of CURL is given. Reinforcement learning.",
    authors=("Yi Wu", "Çağatan Demir", "Wei Chen"),
    categories=("cs.LG", "cs.AI"),
    affiliations=("Tsinghua University",),
    comment="Accepted at NeurIPS 2026",
    journal_ref="J. Mach. Learn. Res. 27",
)

CASES = [
    ('ti:GRPO AND abs:"multi-turn"', GRPO, False),  # multi-turn is in the title only
    ('ti:GRPO AND ti:"multi-turn"', GRPO, True),
    ("ti:multi-turn", GRPO, True),
    ('ti:"multi turn"', GRPO, True),
    ("ti:multiturn", GRPO, False),
    ("RL", paper(abstract="the URL and CURL tools"), False),
    ("RL", paper(abstract="deep RL for agents"), True),
    ("rl", paper(abstract="Deep-RL."), True),
    ("abs:learn", GRPO, False),  # words, not substrings
    ("abs:learn*", GRPO, True),
    ("agent*", GRPO, True),
    ("abs:reinforcement-learn*", GRPO, True),
    ('abs:"reinforcement learn*"', GRPO, False),  # inside quotes * is not a wildcard
    ("Cagatan", paper(title="On Çağatan's lemma"), True),
    ("Çağatan", paper(title="On Cagatan lemma"), True),
    ("ti:μP", paper(title=r"Scaling with $\mu$P"), True),
    (r"ti:$\mu$P", paper(title="Scaling with μP"), True),
    ("ti:Schrödinger", paper(title=r"The Schr\"odinger bridge"), True),
    ('au:"Yi Wu"', GRPO, True),
    ('au:"Y. Wu"', GRPO, True),
    ('au:"Yi Wu"', paper(authors=("Y. Wu",)), True),
    ('au:"Yi Wu"', paper(authors=("Yi Chen", "Wei Wu")), False),  # never across authors
    ('au:"Yi Wu"', paper(authors=("Yiming Wu",)), False),
    ('au:"Yi Wu"', paper(authors=("Yi X. Wu",)), True),  # a middle initial
    ("au:Wu_Y", GRPO, True),
    ("au:Wu_Y", paper(authors=("Yan Wu",)), True),
    ("au:Wu_Y", paper(authors=("Wei Wu", "Yi Chen")), False),
    ("au:Wu_W", GRPO, False),
    ("au:wu", GRPO, True),
    ("au:wu", paper(authors=("Xiaowu Li", "Wuhan Zhang")), False),  # not a substring
    ("au:wu*", paper(authors=("Wuhan Zhang",)), True),
    ("au:Cagatan", GRPO, True),
    # arXiv's author forms: `_` joins a surname's words, a trailing `_X` is an initial.
    ("au:del_maestro", paper(authors=("Adrian Del Maestro",)), True),
    ("au:Del_Maestro_A", paper(authors=("Adrian Del Maestro",)), True),
    ("au:Del_Maestro_A", paper(authors=("A. Del Maestro",)), True),
    ("au:Del_Maestro_B", paper(authors=("Adrian Del Maestro",)), False),
    ("au:del_maestro", paper(authors=("Del Smith", "Maestro Jones")), False),
    ("au:del_maestro", paper(authors=("Maestro Del",)), False),
    ("au:del_mae*", paper(authors=("A. Del Maestro",)), True),
    ("au:del_mae*", paper(authors=("Del Marco",)), False),
    ("au:Wu_Yi", paper(authors=("Wu Yi",)), True),  # underscores read as spaces, as arXiv
    ("au:Wu_Yi", GRPO, False),
    ("au:Kao_Y", paper(authors=("Y. -J. Kao",)), True),
    ("au:demir", GRPO, True),
    ("cat:cs.AI", GRPO, True),
    ("cat:cs.ai", GRPO, True),
    ("cat:cs.*", GRPO, True),
    ("cat:cs", GRPO, True),
    ("cat:cs.CV", GRPO, False),
    ("cat:math.*", GRPO, False),
    ("cat:hep-th", paper(categories=("hep-th",)), True),
    ("cat:hep*", paper(categories=("hep-ph",)), True),
    ("abs:(ALFWorld OR WebShop) ANDNOT cat:cs.CV", GRPO, True),
    ("abs:(ALFWorld OR WebShop) ANDNOT cat:cs.AI", GRPO, False),
    ("abs:(WebShop OR ScienceWorld)", GRPO, False),
    ("aff:tsinghua", GRPO, True),
    ('aff:"Tsinghua University"', GRPO, True),
    ("aff:Peking", GRPO, False),
    ("co:NeurIPS", GRPO, True),
    ("jr:JMLR", GRPO, False),
    ('jr:"Learn. Res"', GRPO, True),
    ("all:ALFWorld", GRPO, True),
    ("ALFWorld", GRPO, True),
    ("NeurIPS", GRPO, False),  # all: is title and abstract only
    ("ti:(GRPO WebShop)", GRPO, True),  # side by side is OR, as on arXiv
    ("ti:(GRPO AND WebShop)", GRPO, False),
    ("id:2607.00001", GRPO, True),
    ("id:2607.00001v3", GRPO, True),
    ("id:arXiv:2607.00001", GRPO, True),
    ("id:2607.0000*", GRPO, True),
    ("id:2607.00002", GRPO, False),
    ("id:hep-th/9901001", paper(id="hep-th/9901001"), True),
    ("doi:10.1103/PhysRevB.88.064512", paper(doi="10.1103/physrevb.88.064512"), True),
    ("doi:10.1103/*", paper(doi="10.1103/physrevb.88.064512"), True),
    ("doi:10.1038/*", paper(doi="10.1103/physrevb.88.064512"), False),
    ("doi:10.1103/*", GRPO, False),  # no DOI
    ("rn:CERN-TH", GRPO, False),
    ("submittedDate:[202607 TO 202607]", GRPO, True),
    ("submittedDate:[20260701 TO 20260701]", GRPO, True),
    ("submittedDate:[2025 TO 20260630]", GRPO, False),
    ("lastUpdatedDate:[202607010000 TO 202607010000]", GRPO, True),
    ("ti:GRPO AND submittedDate:[2025 TO 2025]", GRPO, False),
    ("ti:GRPO ANDNOT submittedDate:[2025 TO 2025]", GRPO, True),
    ('"LLM agents" ANDNOT au:chen', GRPO, False),
    ('"LLM agents" ANDNOT au:smith', GRPO, True),
]


@pytest.mark.parametrize(("expr", "record", "expected"), CASES)
def test_what_matches(expr: str, record: PaperRecord, expected: bool) -> None:
    assert (engine_fires(expr, record) is not None) is expected


def test_terms_say_why_only_with_positive_terms_that_fired() -> None:
    assert engine_fires('ti:GRPO AND ti:"multi-turn"', GRPO) == ("GRPO", "multi-turn")
    assert engine_fires("abs:(WebShop OR ALFWorld) ANDNOT cat:cs.CV", GRPO) == ("ALFWorld",)
    assert engine_fires("agent* OR grpo OR GRPO", GRPO) == ("agent*", "grpo")


def test_topics_need_a_category_and_the_query() -> None:
    engine = MatchEngine()
    engine.add_topic(1, "", ["cs.AI"])
    engine.add_topic(2, "ti:GRPO", ["cs.CV", "cs.RO"])
    engine.add_topic(3, "ti:GRPO", [])
    engine.add_topic(4, "ti:GRPO", ["cs.*"])
    engine.add_topic(5, "", [])  # nothing to match on: never matches
    found = {m.ref_id: m.terms for m in engine.match(GRPO)}
    assert found == {1: ("cs.AI",), 3: ("GRPO",), 4: ("GRPO", "cs.*")}
    assert all(m.kind is MatchKind.TOPIC for m in engine.match(GRPO))


def test_alerts_are_added_replaced_and_removed_incrementally() -> None:
    engine = MatchEngine()
    engine.add_alert(1, "ti:GRPO")
    engine.add_alert(2, "ti:GRPO AND cat:cs.AI")
    engine.add_alert(3, "webshop")
    assert {m.ref_id for m in engine.match(GRPO)} == {1, 2}
    engine.add_alert(3, "alfworld")  # same id: replaced
    assert {m.ref_id for m in engine.match(GRPO)} == {1, 2, 3}
    assert engine.remove_alert(1) is True
    assert engine.remove_alert(1) is False
    assert {m.ref_id for m in engine.match(GRPO)} == {2, 3}  # the shared pattern lives on
    engine.remove_alert(2)
    engine.remove_alert(3)
    assert engine.match(GRPO) == []
    assert engine.stats() == {"queries": 0, "patterns": 0, "index_keys": 0}


def test_a_malformed_alert_is_refused_and_changes_nothing() -> None:
    engine = MatchEngine()
    engine.add_alert(1, "ti:GRPO")
    with pytest.raises(Exception, match="unclosed quote"):
        engine.add_alert(1, 'ti:"GRPO')
    assert [m.ref_id for m in engine.match(GRPO)] == [1]


def test_topic_query_combines_query_and_categories() -> None:
    node = topic_query("agent*", ["cs.AI", "cs.*"])
    assert node is not None
    assert parse_query("all:agent* AND (cat:cs.AI OR cat:cs.*)") == node
    assert topic_query("", []) is None


def _engine_and_baseline_agree(
    papers: list[PaperRecord], alerts: list[str], topics: list[tuple[str, list[str]]]
) -> int:
    engine = MatchEngine()
    for i, (query, cats) in enumerate(topics):
        engine.add_topic(i, query, cats)
    for i, query in enumerate(alerts):
        engine.add_alert(i, query)
    queries = [(MatchKind.TOPIC, i, topic_query(q, c)) for i, (q, c) in enumerate(topics)]
    queries += [(MatchKind.ALERT, i, parse_query(q)) for i, q in enumerate(alerts)]
    total = 0
    for record in papers:
        text = PaperText(record)
        expected = set()
        for kind, ref_id, node in queries:
            terms = fired_terms(node, text) if node else None
            if terms is not None:
                expected.add(Match(record.id, kind, ref_id, terms))
        found = engine.match(record)
        assert len(found) == len(set(found)), "a query matched twice"
        assert set(found) == expected
        total += len(expected)
    return total


def test_engine_equals_baseline_on_a_generated_corpus() -> None:
    rng = random.Random(11)
    vocab = Vocabulary(rng, size=3000)
    papers = generate_papers(rng, vocab, 40)
    alerts = [generate_alert(rng, vocab) for _ in range(2500)]
    topics = [generate_topic(rng, vocab) for _ in range(30)]
    assert _engine_and_baseline_agree(papers, alerts, topics) > 100  # the test has teeth


WORDS = ["rl", "url", "agent", "agents", "multi", "turn", "wu", "yi", "çağatan", "chen"]
TERM = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(WORDS).map(lambda w: f"ti:{w}"),
    st.sampled_from(WORDS).map(lambda w: f"au:{w}"),
    st.sampled_from(["agent*", "mul*", "au:wu*", "cat:cs.*", "cat:cs.AI", "cat:math"]),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=3).map(lambda ws: f'"{" ".join(ws)}"'),
    st.sampled_from(['au:"Yi Wu"', "au:Wu_Y", 'au:"Y Chen"', "multi-turn", "au:Wu_Yi"]),
    st.sampled_from(["au:chen_w", "au:wu_yi*", "id:2607*", "id:2607.00001", "doi:10.1/*"]),
    st.sampled_from(["submittedDate:[2026 TO 2026]", "lastUpdatedDate:[2025 TO 202606]"]),
)
QUERY = st.recursive(
    TERM,
    lambda inner: st.tuples(inner, st.sampled_from([" AND ", " OR ", " ANDNOT ", " "]), inner).map(
        lambda t: f"({t[0]}{t[1]}{t[2]})"
    ),
    max_leaves=6,
)
TEXT = st.lists(st.sampled_from([*WORDS, "URL", "Multi-Turn", "ÇAĞATAN", "x"]), max_size=12)
PAPER = st.builds(
    lambda title, abstract, names, cats: paper(
        title=" ".join(title), abstract=" ".join(abstract), authors=tuple(names), categories=cats
    ),
    TEXT,
    TEXT,
    st.lists(st.sampled_from(["Yi Wu", "Wei Chen", "Y. Chen", "Wu Yi", "Çağatan Wu"]), max_size=3),
    st.sampled_from([("cs.AI",), ("math.PR", "cs.LG"), ("hep-th",)]),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(PAPER, min_size=1, max_size=4), st.lists(QUERY, min_size=1, max_size=12))
def test_engine_equals_baseline_on_random_queries_and_papers(
    papers: list[PaperRecord], alerts: list[str]
) -> None:
    _engine_and_baseline_agree(papers, alerts, [])


@pytest.mark.parametrize(
    "expr",
    [
        "a",
        "a AND b",
        "a OR b OR c",
        "a ANDNOT b",
        "abs:(a OR b) ANDNOT cat:cs.LG",
        "au:Wu_Y OR (a b)",
        "a OR b AND c ANDNOT d",
        "NOT a (b c)",
        "(a OR b) AND (c OR d) ANDNOT (e AND f)",
        "a AND (b OR (c AND d)) ANDNOT e",
    ],
)
def test_compiled_check_agrees_with_the_tree_on_every_subset(expr: str) -> None:
    from itertools import chain, combinations

    from bot.matching.terms import compile_check, compile_tree, holds

    terms: list[object] = []

    def leaf(term: object) -> int:
        terms.append(term)
        return len(terms) - 1

    tree = compile_tree(parse_query(expr), leaf)
    check = compile_check(tree)
    ids = range(len(terms))
    subsets = chain.from_iterable(combinations(ids, k) for k in range(len(terms) + 1))
    for subset in map(set, subsets):
        assert check(subset) == holds(tree, subset.__contains__), subset
