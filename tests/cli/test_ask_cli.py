"""`papertide ask`: text and JSON answers from a real store, one-line errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bot.cli import app
from bot.config import Settings
from tests.support.ask import sample_store


@pytest.fixture(scope="module")
def store_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('ask') / 'subscriptions.db'}"

    async def fill() -> None:
        async with sample_store(Settings(database_url=url, sources=["sample"])):
            pass

    asyncio.run(fill())
    return {"PAPERTIDE_DATABASE_URL": url, "PAPERTIDE_PUBLIC_URL": "https://pt.example.org"}


QUESTION = "which papers train agents with GRPO on ALFWorld, and what do they report?"


def test_ask_prints_cited_papers_and_the_filtered_topic_link(store_env: dict[str, str]) -> None:
    result = CliRunner().invoke(app, ["ask", "rl-for-llm-agents", QUESTION], env=store_env)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"Q: {QUESTION}  (RL for LLM Agents)")
    assert "[1] " in out
    assert "[4] " in out
    assert "https://arxiv.org/abs/2606." in out
    assert (
        "more papers match: https://pt.example.org/topics/rl-for-llm-agents?q=which+papers" in out
    )


def test_ask_json_is_one_document(store_env: dict[str, str]) -> None:
    args = ["ask", "rl-for-llm-agents", QUESTION, "--json", "--papers", "2"]
    result = CliRunner().invoke(app, args, env=store_env)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["topic"] == "rl-for-llm-agents"
    assert document["mode"] == "extractive"
    assert document["terms"] == ["train", "agents", "grpo", "alfworld"]
    assert [p["n"] for p in document["papers"]] == [1, 2]
    passage = document["papers"][0]["passages"][0]
    assert all(passage["text"][s:e] for s, e in passage["highlights"])
    assert document["more"] == document["total"] - 2


def test_ask_all_takes_just_the_question(store_env: dict[str, str]) -> None:
    args = ["ask", "--all", "temporal credit assignment with hindsight", "--json"]
    result = CliRunner().invoke(app, args, env=store_env)
    assert result.exit_code == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["topic"] is None
    assert "Hindsight" in document["papers"][0]["title"]
    assert document["more_url"] is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "no-such-topic", "GRPO"], "There is no topic called 'no-such-topic'"),
        (["ask", "rl-for-llm-agents", "which of the"], "a few words"),
        (["ask", "rl-for-llm-agents"], "give a topic and a question"),
    ],
)
def test_ask_errors_are_one_line(store_env: dict[str, str], args: list[str], message: str) -> None:
    result = CliRunner().invoke(app, args, env=store_env)
    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_ask_on_an_empty_store_says_nothing_matches(tmp_path: Path) -> None:
    env = {"PAPERTIDE_DATABASE_URL": f"sqlite:///{tmp_path / 'empty.db'}"}
    result = CliRunner().invoke(app, ["ask", "--all", "GRPO agents"], env=env)
    assert result.exit_code == 0, result.stderr
    assert "No paper matches those words" in result.stdout


def test_ask_and_status_say_how_far_behind_the_index_is(tmp_path: Path) -> None:
    from datetime import UTC, datetime

    from bot.ingest.persist import ingest_batch
    from bot.service.root import open_papertide
    from bot.types import PaperRecord

    url = f"sqlite:///{tmp_path / 'lag.db'}"
    when = datetime(2026, 6, 1, tzinfo=UTC)

    records = [
        PaperRecord(
            id=f"2606.0000{i}",
            version=1,
            title=f"Queued paper {i}",
            abstract="Not searchable yet.",
            authors=(),
            categories=("cs.LG",),
            published=when,
            updated=when,
            source="test",
        )
        for i in range(2)
    ]

    async def ingest_only() -> None:
        # Stored and queued by ingest, the indexer not run (serve would run it at once).
        async with (
            open_papertide(Settings(database_url=url)) as root,
            root.store.sessions() as session,
            session.begin(),
        ):
            await ingest_batch(session=session, records=records, matcher=_NoMatches())

    asyncio.run(ingest_only())
    env = {"PAPERTIDE_DATABASE_URL": url, "PAPERTIDE_SOURCES": '["arxiv"]'}
    asked = CliRunner().invoke(app, ["ask", "--all", "queued paper", "--json"], env=env)
    assert asked.exit_code == 0, asked.stderr
    assert "full-text index: 2 paper(s) not searchable yet" in asked.stderr
    assert json.loads(asked.stdout)["papers"] == []
    status = CliRunner().invoke(app, ["status"], env=env)
    assert status.exit_code == 0, status.stderr
    assert "full-text index: 2 paper(s) not searchable yet" in status.stdout


class _NoMatches:
    def match(self, paper: object) -> list[object]:
        return []
