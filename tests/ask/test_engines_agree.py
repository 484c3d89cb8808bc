"""SQLite (FTS5) and PostgreSQL (tsvector + GIN) return nearly the same top papers.

The same corpus (the bundled sample, ingested for real into both) and the same questions
go to both stores; the measured top-10 overlap is printed (run with -s to see it) and
must stay at or above 90% on average, with no question below 70%.
"""

from __future__ import annotations

from pathlib import Path

from bot.config import Settings
from tests.support.ask import sample_store, topic_ref

QUESTIONS = [
    ("rl-for-llm-agents", "which papers train agents with GRPO on ALFWorld, what do they report?"),
    ("rl-for-llm-agents", "asynchronous rollouts for agentic reinforcement learning"),
    ("rl-for-llm-agents", "turn-level credit assignment for multi-turn agents"),
    ("rl-for-llm-agents", "verifiable rewards and self-evolving agents"),
    ("rl-for-llm-agents", "PPO value network baselines for web agents"),
    ("rl-for-llm-agents", "sparse rewards for tool-using agents"),
    ("rl-for-llm-agents", "papers from Tsinghua University"),
    ("rl-for-llm-agents", "software engineering agents trained with a curriculum"),
    (None, "on-policy distillation for small language models"),
    (None, "diffusion consistency distillation with few steps"),
    (None, "federated fine-tuning client drift"),
    (None, "sparse autoencoders shared features across model families"),
    (None, "hallucination in multimodal models"),
    (None, "learning rate schedules scaling laws"),
    (None, "red teaming attacks on language models"),
    (None, "process reward models without human labels"),
]  # fmt: skip


async def _tops(settings: Settings) -> list[list[str]]:
    async with sample_store(settings) as root:
        asker = root.asker()
        refs = {slug: await topic_ref(root, slug) for slug, _ in QUESTIONS if slug}
        out = []
        for slug, question in QUESTIONS:
            found = await asker.search(question, topic=refs[slug] if slug else None, limit=10)
            out.append([s.paper_id for s in found.ranked])
        return out


async def test_sqlite_and_postgresql_agree_on_the_top_ten(
    sqlite_url: str, pg_url: str, tmp_path: Path
) -> None:
    common = {"sources": ["sample"], "console_out": str(tmp_path / "console.out")}
    lite = await _tops(Settings(database_url=sqlite_url, **common))
    pg = await _tops(Settings(database_url=pg_url, **common))
    overlaps = []
    for (_, question), a, b in zip(QUESTIONS, lite, pg, strict=True):
        assert len(a) == 10, question
        overlap = len(set(a) & set(b)) / 10
        overlaps.append(overlap)
        print(f"top-10 overlap {overlap:.0%}  {question}")
    mean = sum(overlaps) / len(overlaps)
    print(f"mean top-10 overlap {mean:.1%} over {len(QUESTIONS)} questions")
    assert mean >= 0.9
    assert min(overlaps) >= 0.7
