"""Benchmark: weekly digests, build + render + send vs the aiosmtplib floor, client CPU.

    .venv/bin/python bench/digest.py [--recipients 2000] [--connections 8] [--rounds 3]
    .venv/bin/python bench/digest.py --quick         # 300 recipients

Both cases send to the same aiosmtpd sink (tests/support/smtp.py, its own process) over
`--connections` SMTP connections, alternately, in this one process:
- papertide: for each recipient, build the digest (pure), render it (jinja2, CSS
  inlined) and send it through EmailChannel (MIME built by hand, SmtpMailer), rendering
  overlapped with sending in a bounded pipeline;
- the aiosmtplib floor: the same mails, rendered to bytes beforehand (not timed), sent
  with plain aiosmtplib.SMTP.sendmail on the same number of connections.
The figure is the client's CPU milliseconds per mail (process time of the send phase);
also printed: wall-clock mails/s and render-only digests/s.
Goal (issue 14): papertide's client CPU <= 1.2x the floor's.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.sidebyside import Series, alternate, header, report, rounds_arg
from bot.outbox.channel import Delivered
from bot.platforms.email.channel import EmailChannel
from bot.platforms.email.mailer import SmtpMailer
from bot.types import MessageKind, OutboundMessage, Platform, TargetKind, TargetRef
from digests.build import AlertInfo, Recipient, RecipientData, WeekData, build_digest
from digests.links import PublicLinks
from digests.render import DigestRenderer, MailIdentity
from digests.sample import sample_week

MAIL_FROM = "papertide <digest@bench.example.org>"
TOPICS = 200
FOLLOWS = 5
LINKS = PublicLinks(
    "https://bench.example.org", lambda r, p: f"{p}.{r.id:08d}.signature", mail_from=MAIL_FROM
)
RENDERER = DigestRenderer(links=LINKS, identity=MailIdentity(MAIL_FROM))


def recipients(week: WeekData, n: int) -> Iterator[RecipientData]:
    slugs = list(week.topics)
    for i in range(n):
        follows = frozenset(slugs[(i * 7 + k * 13) % len(slugs)] for k in range(FOLLOWS))
        first = week.papers_by_topic[next(iter(sorted(follows)))]
        caught = (week.papers[first[i % len(first)]],)
        yield RecipientData(
            Recipient(i + 1, f"user{i}@example.org"),
            follows,
            (AlertInfo(i + 1, 'abs:"credit assignment"', caught),),
        )


def render_all(week: WeekData, n: int) -> tuple[float, int]:
    started = time.perf_counter()
    total = 0
    for data in recipients(week, n):
        digest = build_digest(data, week, papers_per_topic=8)
        assert digest is not None
        total += len(RENDERER.render(digest)["html"])
    return time.perf_counter() - started, total // n


async def send_all(
    week: WeekData, people: list[RecipientData], port: int, connections: int
) -> tuple[float, int]:
    channel = EmailChannel(
        mailer=SmtpMailer(host="127.0.0.1", port=port, connections=connections),
        mail_from=MAIL_FROM,
        clock=lambda: datetime(2026, 9, 28, 8, tzinfo=UTC),
    )
    in_flight: set[asyncio.Task[object]] = set()
    delivered = 0

    def done(task: asyncio.Task[object]) -> None:
        nonlocal delivered
        in_flight.discard(task)
        delivered += isinstance(task.result(), Delivered)

    started = time.perf_counter()
    for data in people:
        digest = build_digest(data, week, papers_per_topic=8)
        assert digest is not None
        payload = RENDERER.render(digest)
        target = TargetRef(data.recipient.id, Platform.EMAIL, TargetKind.EMAIL, "", payload["to"])
        msg = OutboundMessage(data.recipient.id, f"t{data.recipient.id}:digest:2026-W39",
                              MessageKind.DIGEST, target, payload)  # fmt: skip
        task = asyncio.ensure_future(channel.send(msg))
        in_flight.add(task)
        task.add_done_callback(done)
        # Bounded pipeline: rendering (CPU) overlaps sending (I/O), memory stays flat.
        if len(in_flight) >= connections * 2:
            await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
    if in_flight:
        await asyncio.wait(in_flight)
    elapsed = time.perf_counter() - started
    await channel.close()
    return elapsed, delivered


def prerender(week: WeekData, n: int) -> list[tuple[str, bytes]]:
    """Every mail as the bytes EmailChannel would send (for the floor; not timed)."""
    from bot.platforms.email.mime import build_message, message_id_for

    out = []
    when = datetime(2026, 9, 28, 8, tzinfo=UTC)
    for data in recipients(week, n):
        digest = build_digest(data, week, papers_per_topic=8)
        assert digest is not None
        payload = dict(RENDERER.render(digest))
        key = f"t{data.recipient.id}:digest:2026-W39"
        raw = build_message(payload, mail_from=MAIL_FROM, now=when,
                            message_id=message_id_for(key, "bench.example.org"))  # fmt: skip
        out.append((str(payload["to"]), raw))
    return out


async def send_floor(mails: list[tuple[str, bytes]], port: int, connections: int) -> float:
    """Pre-rendered mails over `connections` plain aiosmtplib connections: wall seconds."""
    import aiosmtplib

    queue: asyncio.Queue[tuple[str, bytes]] = asyncio.Queue()
    for mail in mails:
        queue.put_nowait(mail)

    async def connection() -> None:
        smtp = aiosmtplib.SMTP(hostname="127.0.0.1", port=port)
        await smtp.connect()
        while not queue.empty():
            to, raw = queue.get_nowait()
            await smtp.sendmail("digest@bench.example.org", [to], raw)
        await smtp.quit()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--recipients", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="300 recipients")
    args = parser.parse_args()
    n = 300 if args.quick else args.recipients
    rounds = rounds_arg(args.rounds)
    header(
        f"digest: {n:,} recipients ({TOPICS} topics, {FOLLOWS} followed each), "
        f"{args.connections} SMTP connections to one aiosmtpd sink",
        rounds,
    )
    week = sample_week("2026-W39", topics=TOPICS, papers_per_topic=30)
    render_all(week, 200)  # warm up templates and caches
    mails = prerender(week, n)
    # The readers' data made up front, as the floor's mails are: making it up is the
    # bench's work, not papertide's (in `digest send` it is loaded from the database).
    people = list(recipients(week, n))
    kb = sum(len(raw) for _, raw in mails) / len(mails) / 1024
    sink = subprocess.Popen(
        [sys.executable, "-m", "tests.support.smtp"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    walls: dict[str, list[float]] = {"papertide": [], "aiosmtplib floor": []}
    renders: list[float] = []
    try:
        assert sink.stdout is not None
        port = int(sink.stdout.readline())

        def ours() -> float:
            cpu = time.process_time()
            wall, delivered = asyncio.run(send_all(week, people, port, args.connections))
            cpu = time.process_time() - cpu
            assert delivered == n, delivered
            walls["papertide"].append(n / wall)
            render_s, _ = render_all(week, min(n, 500))
            renders.append(min(n, 500) / render_s)
            return 1000 * cpu / n

        def floor() -> float:
            cpu = time.process_time()
            wall = asyncio.run(send_floor(mails, port, args.connections))
            walls["aiosmtplib floor"].append(n / wall)
            return 1000 * (time.process_time() - cpu) / n

        got = alternate({"papertide": ours, "aiosmtplib floor": floor}, rounds)
    finally:
        sink.terminate()
        sink.wait()
    report(
        "client CPU ms per mail (papertide: build + render + MIME + send; floor: send only)",
        Series("papertide", got["papertide"]),
        Series("aiosmtplib floor", got["aiosmtplib floor"]),
        higher_is_better=False,
        note=f"{kb:.0f} KiB per mail",
    )
    report(
        "mails per wall second",
        Series("papertide", walls["papertide"]),
        Series("aiosmtplib floor", walls["aiosmtplib floor"]),
        higher_is_better=True,
    )
    report(
        "render only (build + jinja2), digests per second",
        Series("papertide", renders),
        None,
        higher_is_better=True,
    )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of this process: {peak:.0f} MB (includes the floor's pre-rendered mails)")


if __name__ == "__main__":
    main()
