"""A topic added (or redefined) after papers were stored gets its papers filed at start."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select
from sqlmodel import col

from bot.config import Settings
from bot.ingest.poll import run_poll
from bot.service.root import Papertide, open_papertide
from bot.store.models import OutboxRow, PaperTopic, Topic

ONE = """
[[topic]]
slug = "rl-for-llm-agents"
name = "RL for LLM Agents"
categories = ["cs.LG", "cs.CL", "cs.AI", "cs.MA"]
query = 'abs:("reinforcement learning" OR GRPO OR PPO) AND abs:agent*'
"""
TWO = (
    ONE
    + """
[[topic]]
slug = "llm-reasoning"
name = "LLM Reasoning"
categories = ["cs.CL", "cs.AI", "cs.LG"]
query = 'all:("chain-of-thought" OR "test-time compute" OR reasoning)'
"""
)


async def _links(root: Papertide, slug: str) -> int:
    async with root.store.sessions() as session:
        stmt = (
            select(func.count())
            .select_from(PaperTopic)
            .join(Topic, col(Topic.id) == col(PaperTopic.topic_id))
            .where(col(Topic.slug) == slug)
        )
        return int((await session.execute(stmt)).scalar_one())


async def test_new_and_redefined_topics_are_filed_over_stored_papers(
    settings: Settings, tmp_path: Path
) -> None:
    catalog = tmp_path / "topics.toml"
    catalog.write_text(ONE)
    settings = settings.model_copy(update={"topics_file": catalog})
    async with open_papertide(settings, migrate=False) as root:
        await root.sync_catalog()
        # Without fan-out, so the last assertion shows what filing itself sends.
        await run_poll(settings=settings, sessions=root.store.sessions, source_name="sample")
        rl_before = await _links(root, "rl-for-llm-agents")
        assert rl_before > 0

        catalog.write_text(TWO)  # a topic added after the papers arrived
        report = await root.sync_catalog()
        assert report.refile == ("llm-reasoning",)
        assert await _links(root, "llm-reasoning") > 0
        assert await _links(root, "rl-for-llm-agents") == rl_before  # untouched

        narrower = TWO.replace('["cs.LG", "cs.CL", "cs.AI", "cs.MA"]', '["cs.MA"]', 1)
        catalog.write_text(narrower)  # a redefined topic is filed again from scratch
        report = await root.sync_catalog()
        assert report.refile == ("rl-for-llm-agents",)
        assert 0 < await _links(root, "rl-for-llm-agents") < rl_before

        async with root.store.sessions() as session:
            queued = (await session.execute(select(func.count()).select_from(OutboxRow))).scalar()
        assert queued == 0  # filing history never sends alerts
