"""The engine's shortcuts give the baseline's answers: the per-field word cache (kept
current as patterns come and go), phrase pairs built only from filed first words, names
decided from the name table, and queries decided by one set check (two alternatives
firing at once included). Checked on the real captured arXiv papers with queries made
from their own words and authors, and on hand-made edge cases."""

from __future__ import annotations

import random
from itertools import pairwise

import pytest

from bot.ingest.sources.arxiv_atom import parse_page
from bot.matching.engine import MatchEngine
from bot.matching.query import parse_query
from bot.matching.terms import fired_terms
from bot.matching.textnorm import PaperText, words
from bot.types import PaperRecord
from tests.matching.test_engine import paper
from tests.support.paths import FIXTURES


def _real_papers() -> list[PaperRecord]:
    found: list[PaperRecord] = []
    for name in ("api_au_a_del_maestro.xml", "api_lmm.xml"):
        body = (FIXTURES / "arxiv_query" / name).read_bytes()
        found += parse_page(body, source="arxiv", url=name).papers
    return found


def _queries_from(papers: list[PaperRecord], rng: random.Random, n: int) -> list[str]:
    """Queries as people write them, from the papers' own words, phrases and authors,
    so that most of them match something."""
    title_words = [w for p in papers for w in words(p.title) if len(w) > 2]
    abstract_words = [w for p in papers for w in words(p.abstract) if len(w) > 2]
    phrases = [" ".join(pair) for p in papers for pair in pairwise(words(p.abstract))]
    people = [a.name for p in papers for a in p.authors if len(words(a.name)) > 1]
    cats = sorted({c for p in papers for c in p.categories if c.replace(".", "").isalpha()})

    def term() -> str:
        kind = rng.randrange(8)
        if kind == 0:
            return "ti:" + rng.choice(title_words)
        if kind == 1:
            return rng.choice(abstract_words)
        if kind == 2:
            return f'abs:"{rng.choice(phrases)}"'
        if kind == 3:
            return rng.choice(abstract_words)[:3] + "*"
        name = words(rng.choice(people))
        if kind == 4:
            return f'au:"{name[0]} {name[-1]}"'
        if kind == 5:
            return f"au:{name[-1]}_{name[0][0]}"
        if kind == 6:
            return f'au:"{name[0][0]} {name[-1]}"'
        return f"cat:{rng.choice(cats)}"

    shapes = ("{}", "{} OR {}", "{} AND {}", "({} OR {}) ANDNOT {}", "{} OR ({} AND {})")
    return [
        (shape := rng.choice(shapes)).format(*(term() for _ in range(shape.count("{}"))))
        for _ in range(n)
    ]


def _agree(engine: MatchEngine, queries: dict[int, str], papers: list[PaperRecord]) -> int:
    """Assert the engine equals the baseline on every paper; return the matches."""
    total = 0
    for record in papers:
        text = PaperText(record)
        expected = {}
        for ref, expr in queries.items():
            terms = fired_terms(parse_query(expr), text)
            if terms is not None:
                expected[ref] = terms
        found = {m.ref_id: m.terms for m in engine.match(record)}
        assert found == expected, record.id
        total += len(found)
    return total


def test_engine_equals_baseline_on_real_papers_with_their_own_words() -> None:
    papers = _real_papers()
    queries = dict(enumerate(_queries_from(papers, random.Random(5), 600)))
    engine = MatchEngine()
    for ref, expr in queries.items():
        engine.add_alert(ref, expr)
    assert _agree(engine, queries, papers) > 300  # the queries do match: the test has teeth


def test_the_word_cache_follows_patterns_added_and_removed() -> None:
    papers = _real_papers()
    rng = random.Random(9)
    pool = _queries_from(papers, rng, 400)
    engine, live = MatchEngine(), {}
    for step in range(6):  # match (filling the caches), then change a third of the alerts
        _agree(engine, live, papers)
        for ref in rng.sample(range(len(pool)), len(pool) // 3):
            if ref in live and step % 2:
                engine.remove_alert(ref)
                del live[ref]
            else:
                live[ref] = pool[(ref + step) % len(pool)]
                engine.add_alert(ref, live[ref])
    assert _agree(engine, live, papers) > 0
    for ref in list(live):
        engine.remove_alert(ref)
    assert engine.stats() == {"queries": 0, "patterns": 0, "index_keys": 0}


NAMES = (
    "Yi Wu", "Y. Wu", "Yu-Ting Wu", "Wu Yi", "Yi Ming Wu", "Ann Wu Lee", "Y Wu Wu", "Wu Wu",
    "Yu Wu", "W Wu", "Ming Wu", "Wei Lee", "Y Lee",
)  # fmt: skip


@pytest.mark.parametrize("author", NAMES)
def test_names_with_one_given_name_are_decided_as_the_baseline_decides(author: str) -> None:
    queries = dict(
        enumerate(
            ['au:"Yi Wu"', "au:Wu_Y", 'au:"Yu Wu"', 'au:"Y Wu"', "au:Wu_Yi", 'au:"Ming Wu"',
             'au:"Ann Lee"', "au:Lee_W", 'au:"Wu Lee"', 'au:"Yi Ming Wu"', "au:wu"]
        )
    )  # fmt: skip
    engine = MatchEngine()
    for ref, expr in queries.items():
        engine.add_alert(ref, expr)
    record = paper(authors=(author, "Zed Other"))
    _agree(engine, queries, [record])


def test_phrases_match_inside_one_segment_and_at_its_end() -> None:
    queries = {1: '"deep learning"', 2: 'ti:"learning deep"', 3: "abs:learning-deep", 4: '"a b"'}
    engine = MatchEngine()
    for ref, expr in queries.items():
        engine.add_alert(ref, expr)
    record = paper(title="Why deep", abstract="learning deep nets, deep learning")
    assert _agree(engine, queries, [record]) == 2  # 1 and 3; title + abstract is no phrase
    record = paper(title="Deep learning deep", abstract="A B")
    assert {m.ref_id for m in engine.match(record)} == {1, 2, 4}


def test_two_alternatives_firing_at_once_report_both_terms() -> None:
    engine = MatchEngine()
    engine.add_alert(1, "abs:(grpo OR alfworld) ANDNOT cat:math")
    engine.add_alert(2, "grpo OR alfworld")
    engine.add_alert(3, "ti:grpo AND abs:alfworld")
    both = paper(title="GRPO", abstract="GRPO on ALFWorld")
    found = {m.ref_id: m.terms for m in engine.match(both)}
    assert found == {1: ("grpo", "alfworld"), 2: ("grpo", "alfworld"), 3: ("grpo", "alfworld")}
    one = paper(title="x", abstract="ALFWorld")
    assert {m.ref_id: m.terms for m in engine.match(one)} == {1: ("alfworld",), 2: ("alfworld",)}
    assert engine.match(paper(abstract="GRPO", categories=("math.OC",))) != []
    assert {m.ref_id for m in engine.match(paper(abstract="GRPO", categories=("math.OC",)))} == {2}


def test_a_word_met_before_is_looked_up_again_when_its_patterns_change() -> None:
    engine = MatchEngine()
    engine.add_alert(1, "ti:grpo")
    record = paper(title="GRPO meets ALFWorld")
    assert [m.ref_id for m in engine.match(record)] == [1]  # `alfworld` is now cached
    engine.add_alert(2, "ti:alfworld")
    assert {m.ref_id for m in engine.match(record)} == {1, 2}
    engine.add_alert(3, "ti:alf*")
    engine.remove_alert(2)
    assert {m.ref_id for m in engine.match(record)} == {1, 3}
    engine.remove_alert(3)
    engine.remove_alert(1)
    assert engine.match(record) == []


def test_a_phrase_filed_after_its_first_word_was_met_is_found_and_forgotten() -> None:
    engine = MatchEngine()
    engine.add_alert(1, "ti:meets")
    record = paper(title="GRPO meets ALFWorld meets", abstract="alfworld meets grpo")
    assert [m.ref_id for m in engine.match(record)] == [1]  # `meets` is now cached
    engine.add_alert(2, 'ti:"meets alfworld"')
    engine.add_alert(3, '"meets grpo"')  # title or abstract: found in the abstract
    engine.add_alert(4, 'abs:"grpo meets"')  # `grpo` ends the abstract: no follower
    assert {m.ref_id for m in engine.match(record)} == {1, 2, 3}
    engine.remove_alert(2)
    engine.remove_alert(3)
    assert {m.ref_id for m in engine.match(record)} == {1}
    engine.remove_alert(1)
    engine.remove_alert(4)
    assert engine.match(record) == []
    assert engine.stats()["index_keys"] == 0


OR_SHAPES = (
    "grpo OR (alfworld AND webshop)",
    "(grpo AND webshop) OR (grpo AND alfworld)",  # two items anchored on one word
    "grpo OR (grpo AND alfworld)",
    "(alfworld AND grpo) OR (alfworld AND reward) OR (alfworld ANDNOT webshop)",
    "ti:grpo OR abs:webshop OR (alfworld ANDNOT cat:cs.LG)",
    "au:Wu_Y OR ((grpo OR webshop) AND alfworld)",
    "(grpo AND (webshop OR alfworld)) OR ti:reward",
    '("meets alfworld" AND cat:cs.*) OR (grpo ANDNOT webshop)',
)


def test_an_or_is_decided_under_each_anchor_by_the_items_it_anchors() -> None:
    queries = dict(enumerate(OR_SHAPES))
    engine = MatchEngine()
    for ref, expr in queries.items():
        engine.add_alert(ref, expr)
    words = ("grpo", "alfworld", "webshop", "reward", "meets")
    records = [
        paper(
            title=" ".join(w for k, w in enumerate(words) if mask >> k & 1),
            abstract=" ".join(w for k, w in enumerate(words) if mask >> (4 - k) & 1),
            authors=("Yi Wu",) if mask % 3 == 0 else ("Ann Lee",),
            categories=("cs.LG",) if mask % 2 else ("math.OC",),
            id=f"2607.{mask:05d}",
        )
        for mask in range(32)
    ]
    assert _agree(engine, queries, records) > 60
