"""The one `Asker` of a process: the model's settings, its HTTP client and the links an
answer carries, built from Settings by the composition root."""

from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.ask.answer import TopicRef
from bot.ask.llm import ModelConfig
from bot.ask.service import Asker, MoreUrl
from bot.config import Settings
from bot.subscriptions.urls import PublicUrls


def model_config(settings: Settings) -> ModelConfig | None:
    """The model when PAPERTIDE_LLM_URL and PAPERTIDE_LLM_MODEL are both set, else None."""
    if not settings.llm_url or not settings.llm_model:
        return None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    return ModelConfig(
        url=settings.llm_url,
        model=settings.llm_model,
        api_key=key or None,
        timeout=settings.llm_timeout_seconds,
    )


def more_link(settings: Settings) -> MoreUrl:
    """ "N more papers match" links to the topic page filtered by the question."""
    urls = PublicUrls(settings.public_url)

    def more(topic: TopicRef | None, question: str) -> str | None:
        return urls.topic_search(topic.slug, question) if topic is not None else None

    return more


def model_client(settings: Settings) -> httpx.AsyncClient:
    # The answer's own deadline (llm.call_model) is the one that matters; these bound
    # each step in case that one is raised high.
    timeout = httpx.Timeout(settings.llm_timeout_seconds + 5, connect=5.0)
    return httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False)


def build_asker(
    settings: Settings,
    sessions: async_sessionmaker[AsyncSession],
    http: httpx.AsyncClient | None,
) -> Asker:
    return Asker(
        sessions=sessions,
        model=model_config(settings),
        http=http,
        more_url=more_link(settings),
    )
