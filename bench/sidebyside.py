"""Side by side: papertide and its comparison, alternating, reported the same way everywhere.

The machine is shared (2 cores, other people's jobs), so absolute figures drift from one
minute to the next. Every bench/ script therefore runs papertide's case and the
comparison's case in the same run, alternately (A B, B A, A B …, so drift and warm-up hit
both alike), at least MIN_ROUNDS times, and prints through `report`:

    topic page uncached, req/s (higher is better)
      papertide          min    130.2  median    134.0   rounds: 134.0 130.2 139.9
      bare aiohttp       min  16011.0  median  16900.3   rounds: …
      ratio papertide/bare aiohttp: median 0.008x  (min 0.008x)

The ratio is always papertide's figure divided by the comparison's: above 1 is ahead for a
throughput, behind for a time or a cost; the line says which. `header` prints the machine's
load first, so a reader can judge how busy the machine was.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

MIN_ROUNDS = 3


def rounds_arg(value: int) -> int:
    """At least MIN_ROUNDS: fewer cannot give a median worth printing."""
    return max(MIN_ROUNDS, value)


def load_line() -> str:
    """The machine's load averages and core count, as one line."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def header(title: str, rounds: int, extra: str = "") -> None:
    """The first lines of every report: what runs, how often, how busy the machine is."""
    print(f"== {title}")
    print(f"   {rounds} rounds, alternating; {load_line()}; python {sys.version.split()[0]}")
    if extra:
        print(f"   {extra}")
    sys.stdout.flush()


def _order(names: list[str], round_no: int) -> list[str]:
    """A B C, then C B A: each case runs first as often as last."""
    return names if round_no % 2 == 0 else names[::-1]


def alternate(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run each case once per round, alternating the order; the figures per case, in order
    of the rounds (so `[0]` is each case's first pass)."""
    out: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds_arg(rounds)):
        for name in _order(list(cases), r):
            out[name].append(cases[name]())
    return out


async def alternate_async(
    cases: dict[str, Callable[[], Awaitable[float]]], rounds: int
) -> dict[str, list[float]]:
    """`alternate` for cases that are coroutines."""
    out: dict[str, list[float]] = {name: [] for name in cases}
    for r in range(rounds_arg(rounds)):
        for name in _order(list(cases), r):
            out[name].append(await cases[name]())
    return out


@dataclass
class Series:
    """One case's figures over the rounds."""

    name: str
    values: list[float] = field(default_factory=list)

    @property
    def min(self) -> float:
        return min(self.values)

    @property
    def max(self) -> float:
        return max(self.values)

    @property
    def median(self) -> float:
        return statistics.median(self.values)


def _fmt(value: float) -> str:
    if value != value:  # NaN: a figure that could not be taken
        return "n/a"
    magnitude = abs(value)
    if magnitude >= 1000:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    if magnitude >= 0.1:
        return f"{value:.3f}"
    return f"{value:.4f}"


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def report(
    metric: str,
    ours: Series | tuple[str, Iterable[float]],
    theirs: Series | tuple[str, Iterable[float]] | None,
    *,
    higher_is_better: bool,
    note: str = "",
) -> None:
    """Print both series (min, median, every round) and the ratio ours / theirs.

    `theirs` may be None where the issue names no comparison; the line says so.
    """
    a = ours if isinstance(ours, Series) else Series(ours[0], list(ours[1]))
    b = None
    if theirs is not None:
        b = theirs if isinstance(theirs, Series) else Series(theirs[0], list(theirs[1]))
    better = "higher is better" if higher_is_better else "lower is better"
    print(f"{metric} ({better})" + (f"  [{note}]" if note else ""))
    width = max(len(a.name), len(b.name) if b else 0, 10)
    for s in (a, b):
        if s is None or not s.values:
            continue
        rounds = " ".join(_fmt(v) for v in s.values)
        print(
            f"  {s.name:<{width}}  min {_fmt(s.min):>10}  median {_fmt(s.median):>10}"
            f"   rounds: {rounds}"
        )
    if b is None or not b.values or not a.values:
        print("  (no comparison for this row)")
    else:
        med, low = _ratio(a.median, b.median), _ratio(a.min, b.min)
        # For a time, compare the best (min) runs; for a rate, the best is the max.
        best = _ratio(a.max, b.max) if higher_is_better else low
        print(
            f"  ratio {a.name}/{b.name}: median {_fmt(med)}x  "
            f"(best {_fmt(best)}x; {'above' if higher_is_better else 'below'} 1 = papertide ahead)"
        )
    sys.stdout.flush()


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) of `values` by nearest rank; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.5) - 1))]


class Stopwatch:
    """Wall and CPU seconds of a block: `with Stopwatch() as w: …; w.wall, w.cpu`."""

    wall: float
    cpu: float

    def __enter__(self) -> Stopwatch:
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
