"""The pure steps: questions and time windows, sentences and marks, ranking, plain text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.ask.extract import best_passages, mark, sentences
from bot.ask.plain import render_text
from bot.ask.question import QuestionError, parse_question
from bot.ask.rank import rank_papers, recency
from bot.ask.search import choose_generators
from tests.support.ask import made_answer

NOW = datetime(2026, 10, 7, 15, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "terms", "since", "until"),
    [
        (
            "which papers train agents with GRPO on ALFWorld, and what do they report?",
            ("train", "agents", "grpo", "alfworld"),
            None,
            None,
        ),
        ("GRPO since 2026-09", ("grpo",), datetime(2026, 9, 1, tzinfo=UTC), None),
        ("GRPO since 2026-09-15", ("grpo",), datetime(2026, 9, 15, tzinfo=UTC), None),
        ("GRPO since September 2026", ("grpo",), datetime(2026, 9, 1, tzinfo=UTC), None),
        ("agents in the last 4 weeks", ("agents",), NOW - timedelta(weeks=4), None),
        ("agents past 10 days", ("agents",), NOW - timedelta(days=10), None),
        ("agents last month", ("agents",), NOW - timedelta(days=30), None),
        ("agents this week", ("agents",), datetime(2026, 10, 5, tzinfo=UTC), None),
        ("agents before 2026-09", ("agents",), None, datetime(2026, 9, 1, tzinfo=UTC)),
        ("agents until 2026-09", ("agents",), None, datetime(2026, 10, 1, tzinfo=UTC)),
        ("Çağatan's agents and agent", ("cagatan", "agents"), None, None),
    ],
)
def test_questions_become_terms_and_windows(
    text: str, terms: tuple[str, ...], since: datetime | None, until: datetime | None
) -> None:
    question = parse_question(text, NOW)
    assert question.terms == terms
    assert question.since == since
    assert question.until == until


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Type a question"),
        ("which of the papers?", "a few words"),
        ("x" * 301, "under 300"),
        ("agents since 2026-13", "is not a date"),
        ("agents since 2026-10 before 2026-09", "window is empty"),
    ],
)
def test_questions_we_cannot_search_say_why(text: str, message: str) -> None:
    with pytest.raises(QuestionError, match=message):
        parse_question(text, NOW)


def test_sentences_keep_abbreviations_and_numbers_whole() -> None:
    text = (
        "We study agents, e.g. web agents, as in Wu et al. 2026. They reach 64.1% on "
        "ALFWorld! J. Smith helped. Results hold?"
    )
    assert sentences(text) == [
        "We study agents, e.g. web agents, as in Wu et al. 2026.",
        "They reach 64.1% on ALFWorld!",
        "J. Smith helped.",
        "Results hold?",
    ]


def test_best_passages_cover_the_question_and_mark_its_words() -> None:
    abstract = (
        "Agents are hard to train. We train language agents with GRPO. "
        "Nothing here matters. On ALFWorld, the agents gain 7 points."
    )
    weights = {"grpo": 3.0, "alfworld": 2.5, "train": 0.5, "agent": 0.4}
    passages = best_passages(abstract, weights)
    assert [p.text for p in passages] == [
        "We train language agents with GRPO.",
        "On ALFWorld, the agents gain 7 points.",
    ]
    first = passages[0]
    assert [first.text[s:e] for s, e in first.marks] == ["train", "agents", "GRPO"]
    assert first.segments()[:2] == [("We ", False), ("train", True)]
    long = mark("word " * 200, frozenset({"word"}))
    assert len(long.text) <= 400
    assert long.text.endswith("…")
    assert best_passages("No match at all. Another.", weights)[0].text == "No match at all."


def test_ranking_prefers_all_words_then_recent_papers() -> None:
    def paper(pid: str, title: str, days: float) -> dict[str, object]:
        return {
            "id": pid,
            "title": title,
            "abstract": "",
            "authors": [],
            "published": NOW - timedelta(days=days),
        }

    ranked = rank_papers(
        [
            paper("a", "GRPO", 1),
            paper("b", "GRPO on ALFWorld", 300),
            paper("c", "GRPO", 200),
            paper("d", "x", 0),
        ],
        stem_dfs={"grpo": 30, "alfworld": 10},
        size=1000,
        now=NOW,
    )
    assert [s.paper_id for s in ranked] == ["b", "a", "c"]  # d matches nothing: left out
    assert recency(NOW, NOW) == pytest.approx(1.2)
    assert recency(NOW - timedelta(days=90), NOW) == pytest.approx(1.1)


def test_generators_take_rare_words_within_the_budget() -> None:
    dfs = {"agents": 40_000, "grpo": 900, "alfworld": 300, "train": 60_000, "zzz": 0}
    assert choose_generators(list(dfs), dfs, budget=5000) == (("alfworld", "grpo"), False)
    common = {"agents": 40_000, "train": 60_000}
    assert choose_generators(list(common), common, budget=5000) == (("agents", "train"), True)
    assert choose_generators(["zzz"], dfs) == ((), False)


def test_plain_text_lists_citations_links_and_more() -> None:
    text = render_text(made_answer())
    assert "Q: which papers use GRPO? <!channel>  (RL for LLM Agents)" in text
    assert "Agents trained with GRPO improve <!here> [sic] [1][2]" in text
    assert "[1] <!channel> @everyone GRPO" in text
    assert "    https://arxiv.org/abs/2609.00001" in text
    assert "4 more papers match: http://127.0.0.1:8080/topics/rl-for-llm-agents?q=GRPO" in text
