"""How a worker rides out a database outage: back off, say it once, say when it is over.

Without this, a worker whose store is unreachable retried its claim every 0.2 s and
logged a traceback each time (17,214 lines in 20 s). `StoreHealth` turns failures into
an exponential delay with a cap, logs one line when the store goes away and one when
it is back, and answers the worker's /healthz.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

BASE_SECONDS = 0.5
CAP_SECONDS = 30.0


class StoreHealth:
    """Whether the store answered this worker lately; the delay before trying again."""

    def __init__(
        self,
        *,
        base: float = BASE_SECONDS,
        cap: float = CAP_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base = base
        self._cap = cap
        self._clock = clock
        self.failures = 0  # in a row
        self.last_ok = clock()
        self.last_error = ""

    @property
    def ok(self) -> bool:
        return self.failures == 0

    def failed(self, where: str, exc: BaseException) -> float:
        """Record a failure of `where` (claim, flush, upkeep); seconds to wait before retrying.

        Logged once, with its traceback, when the store goes from answering to not; the
        failures after it are counted, not logged.
        """
        self.last_error = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if self.failures == 0:
            log.error(
                "worker.store_unreachable",
                extra={"where": where, "error": self.last_error},
                exc_info=exc,
            )
        self.failures += 1
        return self.delay()

    def delay(self) -> float:
        """base × 2^(failures−1), capped: 0.5 s, 1 s, 2 s … 30 s."""
        if self.failures == 0:
            return 0.0
        return min(self._cap, self._base * 2.0 ** min(self.failures - 1, 30))

    def succeeded(self) -> None:
        """The store answered: log the recovery once, reset the backoff."""
        if self.failures:
            log.warning(
                "worker.store_back",
                extra={"failures": self.failures, "down_seconds": round(self.down_for(), 1)},
            )
        self.failures = 0
        self.last_ok = self._clock()

    def down_for(self) -> float:
        """Seconds since the store last answered."""
        return max(0.0, self._clock() - self.last_ok)

    def state(self) -> dict[str, Any]:
        """For the worker's /healthz."""
        return {
            "store": "ok" if self.ok else "unreachable",
            "seconds_since_store_answered": round(self.down_for(), 1),
            "error": None if self.ok else self.last_error,
        }
