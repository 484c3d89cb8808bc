"""A made-up week for `papertide digest preview --sample`, the benchmark and tests.

Deterministic plain data (no store, no clock); the first topic reproduces the
reference page's Momentum box: 70 papers against 29, 0.7% of all new papers.
"""

from __future__ import annotations

from datetime import timedelta

from bot.catalog.emerging import Emerging
from bot.catalog.momentum import SpikeRule, TopicCounts, compute_momentum, digest_as_of
from digests.build import AlertInfo, DigestPaper, Recipient, RecipientData, TopicInfo, WeekData

_NAMES = (
    ("rl-for-llm-agents", "RL for LLM Agents"),
    ("process-reward-models", "Process Reward Models"),
    ("agent-memory", "LLM Agent Memory"),
    ("on-policy-distillation", "On-Policy Distillation"),
    ("credit-assignment", "Credit Assignment in RL"),
    ("world-models", "Latent World Models"),
)
_TITLES = (
    "Building Multi-Task Agentic LLMs via Two-Phase Distillation",
    "ECHO: Learning Epistemically Adaptive Language Agents with Turn-Level Credit",
    "SEVA: Self-Evolving Verification Agent with Process Reward for Fact Attribution",
    "UCOB: Learning to Utilize and Evolve Agentic Skills",
    "ATOD: Annealed Turn-aware On-policy Distillation for Multi-turn Agents",
    "SWE-MeM: Learning Adaptive Memory Management for Long-Horizon Coding Agents",
    "Internalizing the Future: A Unified Agentic Training Paradigm",
    "Supersede: Diagnosing and Training the Memory-Update Gap in LLM Agents",
    "Joint Learning of Experiential Rules and Policies for LLM Agents",
    "Neglected Free Lunch from Post-training: Progress Advantage for LLM Agents",
    "Semantic Consistency Policy Optimization for RL of LLM Agents",
)
_AUTHORS = ("Huaijie Wang", "Shusheng Xu", "Yi Wu", "Abhijnan Nath", "Nikhil Krishnaswamy")


def sample_week(week: str = "2026-W39", *, topics: int = 6, papers_per_topic: int = 12) -> WeekData:
    """A week with `topics` topics; the first spikes like the reference page."""
    as_of = digest_as_of(week)
    infos, counts, by_topic, papers = {}, {}, {}, {}
    for t in range(topics):
        slug, name = _NAMES[t] if t < len(_NAMES) else (f"topic-{t}", f"Topic {t}")
        infos[slug] = TopicInfo(slug, name)
        recent, previous = (70, 29) if t == 0 else (20 + t, 22 + 2 * t)
        weekly = (*(3 + (i * (t + 2)) % 9 for i in range(8)), 11, 14, 20, 25)
        counts[slug] = TopicCounts(recent, previous, weekly if t == 0 else weekly[::-1])
        ids = []
        for i in range(papers_per_topic):
            pid = f"2609.{t:02d}{i:03d}"
            papers[pid] = DigestPaper(
                id=pid,
                title=_TITLES[(t + i) % len(_TITLES)],
                authors=_AUTHORS[: 1 + (i % len(_AUTHORS))],
                url=f"https://arxiv.org/abs/{pid}",
                published=as_of - timedelta(hours=6 + 11 * i),
                primary_category=("cs.LG", "cs.AI", "cs.CL")[i % 3],
                topic_count=1 + (i % 3),
            )
            ids.append(pid)
        by_topic[slug] = ids
    momentum = compute_momentum(counts, total_recent=10_000, total_prev=9_500, rule=SpikeRule())
    return WeekData(
        week=week,
        as_of=as_of,
        topics=infos,
        momentum=momentum,
        papers_by_topic=by_topic,
        papers=papers,
        universe="cs, stat and eess",
        emerging=(
            Emerging(
                phrase="test-time scaling",
                words=("test", "time", "scaling"),
                count=9,
                previous=0,
                weekly=(0,) * 11 + (9,),
                p_value=1e-9,
                papers=(),
                query='ti:"test-time scaling" OR abs:"test-time scaling"',
                slug="test-time-scaling",
                categories=("cs.LG",),
            ),
        ),
    )


def sample_recipient(
    week: WeekData, *, person_id: int = 1, email: str = "ada@example.org", follows: int = 3
) -> RecipientData:
    """A recipient following the first `follows` topics, with one alert that caught two papers."""
    slugs = list(week.topics)[:follows]
    first = list(week.papers_by_topic.get(slugs[0], ()))[-2:] if slugs else []
    alert = AlertInfo(1, 'abs:"credit assignment"', tuple(week.papers[p] for p in first))
    return RecipientData(Recipient(person_id, email), frozenset(slugs), (alert,))
