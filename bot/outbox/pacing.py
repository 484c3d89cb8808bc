"""Per-target pacing: a chat channel gets at most its platform's rate.

Each paced key (a chat target, or the one SMTP relay all mail shares) has a
next-allowed time. A worker reserves a slot for a claimed message: a slot within
the short horizon is waited for (the lease is held only that long); a later slot
sends the row back to the queue with `next_attempt_at` at that slot, so a busy
channel never holds leases or blocks the other targets.

The clock is per worker process. Several processes on PostgreSQL each pace on
their own, so a channel may get up to (processes × rate); the platform's 429 with
Retry-After (honoured exactly, and fed back here via `block`) is the backstop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bot.config import Settings
from bot.types import Platform, TargetRef

DEFAULT_HORIZON_SECONDS = 2.0


def rates_from_settings(settings: Settings) -> dict[Platform, float]:
    """Messages per second per paced key, by platform (unlisted platforms are unpaced)."""
    return {
        Platform.SLACK: settings.slack_rate_per_second,
        Platform.DISCORD: settings.discord_rate_per_second,
        Platform.EMAIL: settings.email_rate_per_second,
        Platform.APPRISE: settings.apprise_rate_per_second,
    }


def pace_key(target: TargetRef) -> str:
    # All mail goes through one relay, so the relay is the paced thing, not the mailbox.
    if target.platform is Platform.EMAIL:
        return "email"
    return f"target:{target.id}"


@dataclass(frozen=True, slots=True)
class Slot:
    """When a message may go: `wait` seconds from now; `defer` when beyond the horizon."""

    wait: float
    defer: bool


class Pacer:
    """Next-allowed time per paced key, on a monotonic clock."""

    def __init__(
        self,
        rates: Mapping[Platform, float],
        *,
        horizon: float = DEFAULT_HORIZON_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._intervals = {p: 1.0 / r for p, r in rates.items() if r and r > 0}
        self._horizon = horizon
        self._clock = clock
        self._next: dict[str, float] = {}
        self._deferred: dict[str, float] = {}

    def reserve(self, target: TargetRef) -> Slot:
        """Take the target's next slot, or say how long to defer without taking it."""
        interval = self._intervals.get(target.platform)
        key = pace_key(target)
        blocked_until = self._next.get(key, 0.0)
        now = self._clock()
        if interval is None:
            # Unpaced platforms still honour a Retry-After fed back through `block`.
            wait = max(0.0, blocked_until - now)
            return Slot(wait=wait, defer=wait > self._horizon)
        start = max(now, blocked_until)
        if start - now > self._horizon:
            # Spread the deferred rows one interval apart, so they come back in order
            # instead of all at once (each would bounce again).
            later = max(start, self._deferred.get(key, 0.0))
            self._deferred[key] = later + interval
            return Slot(wait=later - now, defer=True)
        self._next[key] = start + interval
        return Slot(wait=start - now, defer=False)

    def block(self, target: TargetRef, seconds: float) -> None:
        """The platform said "slow down": nothing goes to this key for `seconds`."""
        key = pace_key(target)
        self._next[key] = max(self._next.get(key, 0.0), self._clock() + seconds)
