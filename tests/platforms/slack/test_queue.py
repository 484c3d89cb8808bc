"""Commands after the ack (issue 14): a full queue says "busy" in the ack, the work and
its answer run on the queue's own thread, one person's commands are answered in order, a
stop answers every command it accepted, and a replay sent to another process acts once."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.chat.queue import BUSY, CommandWork
from bot.service.chat_deps import build_command_work
from tests.conftest import count_rows
from tests.support.chat import add_topics, make_deps
from tests.support.servers import (
    FakeSlack,
    command_body,
    fake_slack,
    signed_headers,
)
from tests.support.slack_app import FORM, slack_routes


@asynccontextmanager
async def papertide(
    sessions: async_sessionmaker[AsyncSession], slack: FakeSlack, work: CommandWork, **deps: Any
) -> AsyncIterator[str]:
    """One papertide process's Slack routes over the shared store."""
    try:
        async with slack_routes(sessions, slack.base, work, make_deps(**deps)) as url:
            yield url
    finally:
        await work.queue.close()


def gate_job(gate: threading.Event) -> Any:
    """A job holding its worker until `gate` is set (from the test's loop)."""

    async def wait() -> None:
        await asyncio.to_thread(gate.wait)

    return wait


async def post(http: aiohttp.ClientSession, url: str, body: str, headers: dict[str, str]) -> str:
    async with http.post(f"{url}/slack/events", data=body, headers={**FORM, **headers}) as r:
        assert r.status == 200
        return await r.text()


async def test_a_full_queue_answers_busy_in_the_ack_and_does_nothing(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    await add_topics(sessions)
    work = build_command_work(db_url, workers=1, capacity=1)
    queue = work.queue
    gate = threading.Event()
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, work) as url,
        aiohttp.ClientSession() as http,
    ):
        assert queue.submit("someone else", gate_job(gate))  # fills the only slot
        body = command_body("follow diffusion-models", base=slack.base)
        ack = await post(http, url, body, signed_headers(body))
        assert BUSY in json.loads(ack)["text"]
        gate.set()
        await queue.join()
        assert await count_rows(sessions, "subscription") == 0
        assert slack.responses == []  # the ack was the answer
        # Room again: the same words, a new command, are done and answered.
        body = command_body("follow diffusion-models", base=slack.base)
        assert await post(http, url, body, signed_headers(body)) == ""
        assert "now follows Diffusion Models" in json.dumps(await slack.next_response())
    assert await count_rows(sessions, "subscription") == 1


async def test_the_work_and_its_answer_run_on_the_queues_thread(
    sessions: async_sessionmaker[AsyncSession], command_work: CommandWork
) -> None:
    await add_topics(sessions)
    threads: list[str] = []

    async def request_digest(_session: AsyncSession, _target: Any, email: str) -> str:
        threads.append(threading.current_thread().name)
        return f"Noted: {email}."

    async with (
        fake_slack() as slack,
        papertide(sessions, slack, command_work, request_digest=request_digest) as url,
        aiohttp.ClientSession() as http,
    ):
        body = command_body("digest ann@example.org", base=slack.base)
        assert await post(http, url, body, signed_headers(body)) == ""  # acked, empty
        assert "Noted: ann@example.org." in json.dumps(await slack.next_response())
    assert threads == ["papertide-commands"]


async def test_a_stop_answers_every_accepted_command_and_refuses_new_ones(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    await add_topics(sessions)
    # Bounded by capacity alone: a held worker must not make the three look slow.
    work = build_command_work(db_url, workers=1, capacity=10, wait_budget=None)
    gate = threading.Event()
    texts = ["follow diffusion-models", 'alert add au:"Yi Wu"', "list"]
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, work) as url,
        aiohttp.ClientSession() as http,
    ):
        assert work.queue.submit("before", gate_job(gate))  # holds the one worker
        for n, text in enumerate(texts):
            body = command_body(text, base=slack.base, n=n)
            assert await post(http, url, body, signed_headers(body)) == ""  # accepted
        closing = asyncio.create_task(work.queue.close())
        await asyncio.sleep(0)  # the stop has begun: nothing new is accepted
        late = command_body("alerts", base=slack.base, n=99)
        assert BUSY in json.loads(await post(http, url, late, signed_headers(late)))["text"]
        assert slack.responses == []
        gate.set()
        await closing
        answers = json.dumps(slack.responses)
    assert len(slack.responses) == len(texts)  # every accepted command was answered
    assert "now follows Diffusion Models" in answers
    assert "Yi Wu" in answers
    assert await count_rows(sessions, "subscription") == 1


async def test_one_persons_commands_are_answered_in_the_order_typed(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    await add_topics(sessions)
    # Seven at once from one person is more than the wait budget lets in (the rest would
    # be "busy"); this is about their order, so capacity alone bounds the queue here.
    command_work = build_command_work(db_url, wait_budget=None)
    texts = ["follow diffusion-models", "unfollow diffusion-models"] * 3 + ["list"]
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, command_work) as url,
        aiohttp.ClientSession() as http,
    ):
        for n, text in enumerate(texts):  # each acked before the work is done
            body = command_body(text, base=slack.base, n=n)
            await post(http, url, body, signed_headers(body))
        answers = [json.dumps(await slack.next_response()) for _ in texts]
    for answer, text in zip(answers, texts, strict=True):
        expected = {"follow": "now follows", "unfollow": "no longer follows", "list": "nothing yet"}
        assert expected[text.split()[0]] in answer, (text, answer)
    assert await count_rows(sessions, "subscription") == 0


async def test_a_replay_sent_to_another_process_acts_once(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    await add_topics(sessions)
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, build_command_work(db_url)) as first,
        papertide(sessions, slack, build_command_work(db_url)) as second,
        aiohttp.ClientSession() as http,
    ):
        body = command_body('alert add au:"Yi Wu"', base=slack.base)
        headers = signed_headers(body)  # captured once, replayed to the other process
        await post(http, first, body, headers)
        await slack.next_response()
        await post(http, second, body, headers)
        await post(http, second, body, headers)  # and again: its own memory refuses it
        # A later command from the same person is answered after the replays' turn.
        later = command_body("alerts", base=slack.base)
        await post(http, second, later, signed_headers(later))
        assert "Yi Wu" in json.dumps(await slack.next_response())
        assert slack.responses == []  # the replays got no answer
    assert await count_rows(sessions, "alert") == 1
    assert await count_rows(sessions, "processed_event") >= 2


async def test_busy_is_answered_before_bolt_yet_after_the_signature_check(
    sessions: async_sessionmaker[AsyncSession], db_url: str
) -> None:
    """A full queue is answered at the route, as Bolt's own ack would answer it, and only
    for a request whose signature holds: the forged one still gets its 401."""
    await add_topics(sessions)
    work = build_command_work(db_url, workers=1, capacity=1)
    gate = threading.Event()
    async with (
        fake_slack() as slack,
        papertide(sessions, slack, work) as url,
        aiohttp.ClientSession() as http,
    ):
        assert work.queue.submit("someone else", gate_job(gate))
        body = command_body("list", base=slack.base)
        forged = {**signed_headers(body), "X-Slack-Signature": "v0=" + "0" * 64}
        async with http.post(f"{url}/slack/events", data=body, headers={**FORM, **forged}) as r:
            assert r.status == 401
        async with http.post(
            f"{url}/slack/events", data=body, headers={**FORM, **signed_headers(body)}
        ) as r:
            assert r.status == 200
            assert r.content_type == "application/json"
            assert json.loads(await r.text()) == {"text": BUSY, "response_type": "ephemeral"}
        assert work.queue.refused == 1
        gate.set()
        await work.queue.join()
        assert slack.responses == []
