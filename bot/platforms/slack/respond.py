"""Answers posted from the command queue's thread, over one keep-alive HTTP session.

Bolt's `respond` opens a new aiohttp session (and a new connection) for every answer;
at tens of commands a second that was a fifth of the command thread's time. The work
on the queue's thread answers through `ThreadHttp.respond` instead: the same body to
the same `response_url`, through one session made on, and closed by, that thread's loop
(a session belongs to the loop it was made on, so it is never used from the acks').
The channel check (`conversations.info`) shares the session.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from bot.config import Settings

Respond = Callable[..., Awaitable[Any]]


def web_client(settings: Settings, session: aiohttp.ClientSession | None = None) -> AsyncWebClient:
    """The bot's Web API client; `session` ties it to one loop (None: a session per call)."""
    # Commands retry only a dropped connection, once; the outbox owns delivery retries.
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return AsyncWebClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=int(min(settings.http_timeout_seconds, 10)),
        retry_handlers=[AsyncConnectionErrorRetryHandler(max_retry_count=1)],
        session=session,
    )


class ThreadHttp:
    """The command thread's HTTP session for answers and Web API checks, made on first use."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._session: aiohttp.ClientSession | None = None
        self._client: AsyncWebClient | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None:
            limit = aiohttp.ClientTimeout(total=min(self._settings.http_timeout_seconds, 10))
            self._session = aiohttp.ClientSession(timeout=limit)
        return self._session

    def web_client(self) -> AsyncWebClient:
        """The Web API client for this thread (the bot token; this thread's session)."""
        if self._client is None:
            self._client = web_client(self._settings, self.session())
        return self._client

    def respond(self, response_url: str) -> Respond:
        """What Bolt's `respond(**message)` does, over this thread's session."""

        async def respond(**message: Any) -> None:
            client = AsyncWebhookClient(url=response_url, session=self.session())
            await client.send_dict(message)

        return respond

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
            self._client = None


def answerer(http: ThreadHttp, body: dict[str, Any], respond: Respond) -> Respond:
    """How work on the command thread answers: over that thread's session to the
    request's response_url (Bolt's `respond` when there is none)."""
    url = body.get("response_url")
    return http.respond(str(url)) if url else respond
