"""Prometheus metrics of the outbox (default registry; the web app serves `/metrics`)."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CONTENT_TYPE_LATEST, Counter, Gauge, Histogram, generate_latest

QUEUE_DEPTH = Gauge(
    "papertide_outbox_messages", "Outbox rows by status (refreshed by workers)", ["status"]
)
SENT = Counter("papertide_outbox_sent_total", "Messages delivered", ["platform"])
RETRIED = Counter("papertide_outbox_retried_total", "Deliveries to be retried", ["platform"])
DEAD = Counter("papertide_outbox_dead_total", "Messages dead-lettered", ["platform"])
TARGETS_DISABLED = Counter(
    "papertide_targets_disabled_total", "Targets disabled after a permanent failure", ["platform"]
)
SEND_SECONDS = Histogram(
    "papertide_send_seconds",
    "Time one channel.send() took",
    ["platform"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
ENQUEUE_TO_SEND_SECONDS = Histogram(
    "papertide_enqueue_to_send_seconds",
    "From the outbox row's creation (right after ingest and matching) to delivery",
    ["platform"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 300, 1800, 7200),
)


def set_queue_depth(counts: Mapping[str, int]) -> None:
    """Publish rows per status (from `bot.outbox.count_by_status`)."""
    for status, n in counts.items():
        QUEUE_DEPTH.labels(status=status).set(n)


def render_metrics() -> tuple[bytes, str]:
    """The exposition body and its content type, for the web app's `/metrics`."""
    return generate_latest(), CONTENT_TYPE_LATEST
