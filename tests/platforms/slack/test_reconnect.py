"""The command engine pings no connection before use (a round trip per command): a
command whose pooled connection the database dropped is run once more on a new one."""

from __future__ import annotations

import json

import psycopg
import pytest
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from tests.conftest import count_rows
from tests.platforms.slack.conftest import Rig


def kill_connections(url: str) -> int:
    """What a PostgreSQL restart does to the pools: every other backend of the database ends."""
    parsed = make_url(url)
    admin = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(admin, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (parsed.database,),
        ).fetchall()
    return len(rows)


@pytest.mark.parametrize("db_url", ["postgresql"], indirect=True)
async def test_commands_answer_after_the_database_dropped_their_connections(
    rig: Rig, sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    assert "now follows" in json.dumps(await rig.command("follow rl-for-llm-agents"))
    assert kill_connections(db_url) >= 1  # the command engine's pooled connection among them
    answer = await rig.command("follow diffusion-models")
    assert "now follows" in json.dumps(answer), answer
    assert await count_rows(sessions, "subscription") == 2
    assert kill_connections(db_url) >= 1
    listed = json.dumps(await rig.command("list"))
    assert "RL for LLM Agents" in listed
    assert "Diffusion" in listed
