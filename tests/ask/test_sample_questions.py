"""Questions on the bundled sample return the papers a reader would pick, on both stores.

The expected papers were chosen by reading bot/data/sample_papers.json: the two papers
titled "ε-Greedy Exploration Is Enough for Tool-Using LLM Agents?", the three
"O(√T) Regret for Reinforcement Learning of Language Agents", the six "Temporal Credit
Assignment with Hindsight Return Decomposition", the eight "Oversquashing in GNNs,
Measured" and the nine papers Yi Wu co-wrote. Ingest is the real poll of the sample, so
the indexer catches up right after it (as `poll --once` does).
"""

from __future__ import annotations

from datetime import timedelta

from bot.ask.answer import AnswerMode
from bot.config import Settings
from bot.timeutil import utcnow
from tests.support.ask import sample_store, topic_ref

GREEDY = {"2606.17511", "2606.18991"}
REGRET = {"2606.10148", "2606.11480", "2606.35234"}
HINDSIGHT = {"2606.10111", "2606.15550", "2606.22469", "2606.25022", "2606.28093", "2606.36307"}
OVERSQUASHING = {
    "2606.10481", "2606.12183", "2606.17955", "2606.18066",
    "2606.18732", "2606.18880", "2606.20064", "2606.31090",
}  # fmt: skip
YI_WU = {
    "2606.10333", "2606.10777", "2606.11147", "2606.13145", "2606.13256",
    "2606.13663", "2606.14995", "2606.16512", "2606.16586",
}  # fmt: skip


async def test_questions_on_the_sample_find_the_papers_a_reader_would_pick(
    settings: Settings,
) -> None:
    async with sample_store(settings) as root:
        asker = root.asker()
        rl = await topic_ref(root)

        async def top(question: str, n: int, *, everything: bool = False) -> set[str]:
            found = await asker.search(question, topic=None if everything else rl, limit=n)
            return {s.paper_id for s in found.ranked}

        assert await top("is epsilon-greedy exploration enough for tool-using agents?", 2) == GREEDY
        assert await top("regret bounds for reinforcement learning of language agents", 3) == REGRET
        assert await top("papers by Yi Wu", 9) == YI_WU
        hindsight = "temporal credit assignment with hindsight return decomposition"
        assert await top(hindsight, 6, everything=True) == HINDSIGHT
        assert await top("how is oversquashing measured?", 8, everything=True) == OVERSQUASHING
        # The topic restricts: oversquashing is not about RL for LLM agents.
        assert not await top("how is oversquashing measured?", 8) & OVERSQUASHING

        answer = await asker.ask("which papers train agents with GRPO on ALFWorld?", topic=rl)
        assert answer.mode == AnswerMode.EXTRACTIVE
        assert len(answer.papers) == 4
        assert answer.total > 4
        assert answer.more == answer.total - 4
        assert answer.more_url is not None
        assert "/topics/rl-for-llm-agents?q=which+papers+train" in answer.more_url
        for paper in answer.papers:
            text = " ".join(p.text for p in paper.passages).lower() + paper.title.text.lower()
            assert "grpo" in text
            assert "alfworld" in text  # the second passage covers what the first lacks
            shown = [paper.title, *paper.passages]
            marked = {p.text[s:e].lower() for p in shown for s, e in p.marks}
            assert {"grpo", "alfworld"} <= marked
            assert paper.url == f"https://arxiv.org/abs/{paper.id}"

        recent = await asker.search("GRPO agents in the last 2 weeks", topic=rl, limit=50)
        assert recent.question.since is not None
        assert recent.ranked
        cutoff = utcnow() - timedelta(weeks=2, minutes=5)
        assert all(row["published"] >= cutoff for row in recent.rows.values())
        everything = await asker.search("GRPO agents", topic=rl, limit=200)
        assert recent.total < everything.total
