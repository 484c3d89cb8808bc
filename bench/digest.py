"""Benchmark: build, render and send personalized weekly digests to a local SMTP sink.

    .venv/bin/python bench/digest.py                 # 2,000 and 10,000 recipients
    .venv/bin/python bench/digest.py --recipients 10000 --one

Each size runs in a fresh process (so peak RSS is that size's alone): first build +
render only, then build + render + send through EmailChannel to an aiosmtpd sink in
another process. Recipients are generated lazily, so memory should not grow with them.
Goal (issue 6): >= 300 digests/s render + send on a 2-core machine, memory flat.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

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


async def send_all(week: WeekData, n: int, port: int, connections: int) -> tuple[float, int]:
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
    for data in recipients(week, n):
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


def one(n: int, connections: int) -> dict[str, float]:
    week = sample_week("2026-W39", topics=TOPICS, papers_per_topic=30)
    render_all(week, 200)  # warm up templates and caches
    render_s, html_bytes = render_all(week, n)
    sink = subprocess.Popen(
        [sys.executable, "-m", "tests.support.smtp"],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1],
    )  # fmt: skip
    try:
        assert sink.stdout is not None
        port = int(sink.stdout.readline())
        cpu = time.process_time()
        send_s, delivered = asyncio.run(send_all(week, n, port, connections))
        cpu = time.process_time() - cpu
    finally:
        sink.terminate()
        _, _, usage = os.wait4(sink.pid, 0)
    return {
        "recipients": n,
        "render_per_s": n / render_s,
        "render_send_per_s": n / send_s,
        "delivered": delivered,
        "html_bytes_avg": html_bytes,
        "client_cpu_share": cpu / send_s,
        "sink_cpu_share": (usage.ru_utime + usage.ru_stime) / send_s,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipients", type=int, nargs="*", default=[2000, 10000])
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--one", action="store_true", help="run one size in this process")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.recipients[0], args.connections)))
        return
    print(f"{TOPICS} topics, {FOLLOWS} followed per recipient, {args.connections} SMTP connections")
    print(f"{'recipients':>10} {'render/s':>9} {'render+send/s':>14} {'delivered':>9} "
          f"{'html KB':>8} {'peak RSS MB':>12} {'client CPU':>10} {'sink CPU':>9}")  # fmt: skip
    for n in args.recipients:
        out = subprocess.run(
            [sys.executable, __file__, "--one", "--recipients", str(n),
             "--connections", str(args.connections)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        r = json.loads(out.strip().splitlines()[-1])
        kb = r["html_bytes_avg"] / 1024
        print(f"{r['recipients']:>10} {r['render_per_s']:>9.0f} {r['render_send_per_s']:>14.0f} "
              f"{r['delivered']:>9} {kb:>8.1f} {r['peak_rss_mb']:>12.1f} "
              f"{r['client_cpu_share']:>10.0%} {r['sink_cpu_share']:>9.0%}")  # fmt: skip
        client_ms = 1000 * r["client_cpu_share"] / r["render_send_per_s"]
        sink_ms = 1000 * r["sink_cpu_share"] / r["render_send_per_s"]
        print(f"{'':>10} CPU per digest: client {client_ms:.2f} ms, sink {sink_ms:.2f} ms "
              f"-> {1000 / max(client_ms, sink_ms):.0f}/s with one idle core each")  # fmt: skip
    print("CPU columns: CPU-seconds per wall-second of the send phase (1.0 = one core busy).")


if __name__ == "__main__":
    main()
