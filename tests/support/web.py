"""Test helpers for the web area: the app on a loopback server, seed data, mail links.

The app is built by the composition root (`bot.service.web.web_app`), so the momentum
box is the real one; mail goes out the production way (outbox → worker →
EmailChannel → the SMTP sink of tests/support/smtp.py).
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from typing import Any

import aiohttp
from aiohttp import web
from pydantic import SecretStr
from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker
from sqlmodel import select

from bot.config import Settings
from bot.platforms.email.channel import EmailChannel
from bot.service.root import Papertide, open_papertide
from bot.store.models import Paper, PaperTopic, Topic
from bot.types import Platform

# Real time: tokens carry itsdangerous's wall-clock timestamp, so the app clock must agree.
NOW = datetime.now(UTC).replace(microsecond=0)
SECRET = "test-secret-key-for-the-web-area"
METRICS_TOKEN = "test-metrics-token"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_socket() -> socket.socket:
    """A listening-ready socket on 127.0.0.1 with an OS-chosen port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


@asynccontextmanager
async def serve_app(app: web.Application, sock: socket.socket) -> AsyncIterator[str]:
    """Serve `app` on the pre-bound `sock` (so settings.public_url can know the port)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    host, port = sock.getsockname()[:2]
    try:
        yield f"http://{host}:{port}"
    finally:
        await runner.cleanup()


def text_of(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain",))
    assert part is not None
    return str(part.get_content())  # type: ignore[attr-defined]


def first_link(message: EmailMessage, path: str) -> str:
    match = re.search(rf"https?://\S+{re.escape(path)}\S+", text_of(message))
    assert match, f"no {path} link in the mail"
    return match.group(0)


async def deliver_mail(root: Papertide, *, port: int) -> int:
    """Deliver the outbox's email rows the production way: a worker and the EmailChannel."""
    smtp = root.settings.model_copy(update={"smtp_host": "127.0.0.1", "smtp_port": port})
    channel = EmailChannel.from_settings(smtp)
    try:
        return await root.deliver_until_idle({Platform.EMAIL: channel})
    finally:
        await channel.close()


async def seed(
    sessions: async_sessionmaker[AsyncSession],
    *,
    papers: int = 40,
    title: str = "Learning to Sell",
) -> dict[str, int]:
    """Two topics and `papers` papers in the first (every third also in the second)."""
    async with sessions() as session, session.begin():
        rl = Topic(
            slug="rl-for-llm-agents",
            name="RL for LLM Agents",
            description="RL: Reinforcement Learning",
        )
        mem = Topic(slug="llm-agent-memory", name="LLM Agent Memory")
        session.add_all([rl, mem])
        await session.flush()
        for i in range(papers):
            pid = f"2609.{i:05d}"
            authors = [
                {"name": f"Author {i}-{k}", "affiliations": [f"University {k % 5}"]}
                for k in range(7)
            ]
            session.add(
                Paper(
                    id=pid,
                    title=f"{title} {i}",
                    abstract=f"Abstract of paper {i}.",
                    authors=authors,
                    categories=["cs.CL", "cs.LG"],
                    primary_category="cs.CL",
                    published=NOW - timedelta(hours=7 * i),
                    updated=NOW - timedelta(hours=7 * i),
                )
            )
            await session.flush()
            session.add(PaperTopic(paper_id=pid, topic_id=rl.id))
            if i % 3 == 0:
                session.add(PaperTopic(paper_id=pid, topic_id=mem.id))
        assert rl.id is not None
        assert mem.id is not None
        return {"rl": rl.id, "mem": mem.id}


class Clock:
    """The app's clock; tests move it forward to expire tokens or pass the rate limit."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset


@dataclass
class WebEnv:
    base: str
    settings: Settings
    root: Papertide
    clock: Clock
    sessions: async_sessionmaker[AsyncSession]
    app: web.Application | None = None  # the running app (its deps), where a test asks


def web_settings(db_url: str, port: int) -> Settings:
    return Settings(
        database_url=db_url,
        public_url=f"http://127.0.0.1:{port}",
        secret_key=SecretStr(SECRET),
        metrics_token=SecretStr(METRICS_TOKEN),
        mail_from="papertide <digest@papertide.test>",
        sources=["sample"],
    )


@asynccontextmanager
async def running_web(db_url: str, *, page_cache_seconds: float = 30.0) -> AsyncIterator[WebEnv]:
    """The web app on a loopback port over a seeded store; public_url is its real address."""
    sock = free_socket()
    settings = web_settings(db_url, sock.getsockname()[1])
    clock = Clock()
    async with open_papertide(settings, migrate=False) as root:
        await seed(root.store.sessions)
        app = root.web_app(clock=clock, page_cache_seconds=page_cache_seconds)
        async with serve_app(app, sock) as base:
            yield WebEnv(base, settings, root, clock, root.store.sessions, app)


async def count(sessions: async_sessionmaker[AsyncSession], model: Any, *where: Any) -> int:
    async with sessions() as session:
        stmt = select(func.count()).select_from(model).where(*where)
        return int((await session.execute(stmt)).scalar_one())


async def request_page(
    env: WebEnv, method: str, path: str, **kw: object
) -> tuple[aiohttp.ClientResponse, str]:
    """One request to the running web app, redirects not followed: the response and its text."""
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, env.base + path, allow_redirects=False, **kw) as r,  # type: ignore[arg-type]
    ):
        return r, await r.text()
