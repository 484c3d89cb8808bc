"""Momentum: how fast a topic grows, and whether it is really spiking. Pure, no I/O.

One definition everywhere (digest, `topics list`, chat, web): momentum *as of* an
instant D counts papers by first-version submission date (`Paper.published`) in
[D - 28 days, D) against [D - 56 days, D - 28 days), with the change in percent and
the topic's share of all new papers in the recent window.

A topic is spiking only when its *share* of all new papers rose significantly: given
the n papers the topic had in both windows together, under "no change" each one falls
in the recent window with probability p0 = total_recent / (total_recent + total_prev);
the one-sided exact binomial tail P[X >= recent] is the p-value, corrected across all
topics tested with Benjamini-Hochberg, plus a minimum count and a minimum share rise.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar

from bot.config import Settings
from bot.errors import PapertideError

WINDOW = timedelta(days=28)
CHART_WEEKS = 12
_WEEK = timedelta(days=7)
_ISO_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")
# Terms below this fraction of the running sum no longer change a float64 result.
_NEGLIGIBLE = math.log(1e-18)


class DigestError(PapertideError):
    """A digest or momentum input is invalid (bad ISO week, unknown recipient…)."""


@dataclass(frozen=True, slots=True)
class SpikeRule:
    """When a rise counts as a spike; built from Settings."""

    alpha: float = 0.01
    min_count: int = 10
    min_rise_pct: float = 50.0

    @classmethod
    def from_settings(cls, settings: Settings) -> SpikeRule:
        return cls(settings.spike_p_value, settings.spike_min_count, settings.spike_min_rise_pct)

    def holds(self, q: float | None, recent: int, rise: float | None) -> bool:
        """Whether a tested count with BH-adjusted `q` and share rise `rise` is a spike."""
        return (
            q is not None
            and q < self.alpha
            and recent >= self.min_count
            and rise is not None
            and rise >= self.min_rise_pct
        )


@dataclass(frozen=True, slots=True)
class Momentum:
    """A topic's momentum as of one instant. `p_value` is BH-adjusted (None: not testable)."""

    count_4w: int
    count_prev_4w: int
    change_pct: float | None  # None when the earlier window is empty ("new this month")
    share_pct: float
    spiking: bool
    p_value: float | None
    weekly: tuple[int, ...]

    def to_json(self) -> dict[str, Any]:
        """The `momentum` object of `topics list --json` and the web."""
        return {
            "count_4w": self.count_4w,
            "count_prev_4w": self.count_prev_4w,
            "change_pct": self.change_pct,
            "share_pct": self.share_pct,
            "spiking": self.spiking,
            "p_value": self.p_value,
            "weekly": list(self.weekly),
        }


@dataclass(frozen=True, slots=True)
class TopicCounts:
    """Raw counts of one topic: the two windows and the 12 chart weeks (oldest first)."""

    recent: int
    previous: int
    weekly: tuple[int, ...] = (0,) * CHART_WEEKS


# --- time -----------------------------------------------------------------------------


def momentum_windows(as_of: datetime) -> tuple[datetime, datetime, datetime]:
    """(start of previous window, start of recent window, end) for `as_of` (aware)."""
    end = as_of.astimezone(UTC)
    return end - 2 * WINDOW, end - WINDOW, end


def week_start(instant: datetime) -> datetime:
    """Monday 00:00 UTC of the ISO week containing `instant`."""
    day = instant.astimezone(UTC).date()
    monday = day - timedelta(days=day.weekday())
    return datetime(monday.year, monday.month, monday.day, tzinfo=UTC)


def chart_weeks(as_of: datetime) -> list[datetime]:
    """Monday starts of the 12 ISO weeks (UTC) of the chart, oldest first.

    The last week is the one holding the last instant before `as_of`: for a digest
    (as of a Monday 00:00) that is the digest's week; for "now" the current partial week.
    """
    last = week_start(as_of - timedelta(microseconds=1))
    return [last - (CHART_WEEKS - 1 - i) * _WEEK for i in range(CHART_WEEKS)]


def parse_iso_week(iso_week: str) -> tuple[int, int]:
    """'2026-W39' -> (2026, 39); a DigestError for anything else."""
    found = _ISO_WEEK.match(iso_week.strip())
    if found:
        year, week = int(found.group(1)), int(found.group(2))
        try:
            date.fromisocalendar(year, week, 1)
        except ValueError:
            pass
        else:
            return year, week
    raise DigestError(f"not an ISO week: {iso_week!r} (expected e.g. 2026-W39)")


def digest_as_of(iso_week: str) -> datetime:
    """The Monday 00:00 UTC that ends ISO week `iso_week`: the instant a digest is 'as of'."""
    year, week = parse_iso_week(iso_week)
    monday = date.fromisocalendar(year, week, 1) + timedelta(days=7)
    return datetime(monday.year, monday.month, monday.day, tzinfo=UTC)


def iso_week_of(instant: datetime) -> str:
    """'2026-W39' for the ISO week (UTC) containing `instant`."""
    year, week, _ = instant.astimezone(UTC).isocalendar()
    return f"{year}-W{week:02d}"


def last_complete_week(now: datetime) -> str:
    """The latest ISO week (UTC) that has fully ended at `now`."""
    return iso_week_of(week_start(now) - timedelta(days=1))


# --- statistics -----------------------------------------------------------------------


def binomial_sf(k: int, n: int, p: float) -> float:
    """P[X >= k] for X ~ Binomial(n, p), exact, summed in log space (no overflow)."""
    if k <= 0:
        return 1.0
    if k > n or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    log_norm = math.lgamma(n + 1)

    def log_pmf(i: int) -> float:
        return log_norm - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q

    mode = int((n + 1) * p)
    total = -math.inf
    for i in range(k, n + 1):
        term = log_pmf(i)
        total = _logaddexp(total, term)
        # Past the mode the terms only shrink, so once one is negligible the rest are too.
        if i > mode and term - total < _NEGLIGIBLE:
            break
    return min(1.0, math.exp(total))


def _logaddexp(a: float, b: float) -> float:
    if a == -math.inf:
        return b
    high, low = (a, b) if a >= b else (b, a)
    return high + math.log1p(math.exp(low - high))


def benjamini_hochberg(p_values: Sequence[float], family: int = 0) -> list[float]:
    """BH-adjusted p-values (q-values), in the input order.

    `family`: BH's m when more hypotheses were in play than `p_values` holds, the others
    with p = 1.0. They would sort after every given p (a stable sort puts given 1.0s
    first) and leave the running minimum at 1.0, so they are never built: the same
    figures as padding the list, without sorting a million 1.0s for emerging phrases."""
    m = max(len(p_values), family)
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 1.0
    for rank in range(len(p_values), 0, -1):
        i = order[rank - 1]
        running = min(running, p_values[i] * m / rank)
        adjusted[i] = min(1.0, running)
    return adjusted


def share_rise_pct(counts: TopicCounts, total_recent: int, total_prev: int) -> float | None:
    """Relative rise of the topic's share of all new papers; None when not defined."""
    if total_recent <= 0 or total_prev <= 0 or counts.recent <= 0:
        return None
    if counts.previous == 0:
        return math.inf
    share_now = counts.recent / total_recent
    share_before = counts.previous / total_prev
    return (share_now / share_before - 1.0) * 100.0


K = TypeVar("K", bound=Hashable)


def share_test(
    counts: Mapping[K, TopicCounts],
    *,
    total_recent: int,
    total_prev: int,
    worth: Callable[[TopicCounts], bool] | None = None,
    family: int = 0,
) -> dict[K, float]:
    """BH-adjusted p-values of the share test for every testable key (see the module doc).

    A key is tested when it has papers in either window and both windows have papers
    overall. `worth(counts) is False` gives a key p = 1.0 without summing its tail: it
    still counts in BH's m, and a higher p only makes BH more conservative, so callers
    that could never report that key (emerging phrases under the minimum) lose nothing.
    `family`: BH's m when more hypotheses were in play than `counts` holds (the others
    count with p = 1.0); never less than the keys tested.
    """
    if not (total_recent and total_prev):
        return {}
    p0 = total_recent / (total_recent + total_prev)
    tested = [k for k, c in counts.items() if c.recent + c.previous > 0]
    raw = [
        binomial_sf(c.recent, c.recent + c.previous, p0) if worth is None or worth(c) else 1.0
        for c in (counts[k] for k in tested)
    ]
    return dict(zip(tested, benjamini_hochberg(raw, family), strict=True))


def compute_momentum(
    counts: Mapping[str, TopicCounts], *, total_recent: int, total_prev: int, rule: SpikeRule
) -> dict[str, Momentum]:
    """Momentum of every topic from raw counts, with BH across the topics tested.

    A topic is tested when it has papers in either window and both windows have papers
    overall; the others get `p_value=None` and never spike.
    """
    adjusted = share_test(counts, total_recent=total_recent, total_prev=total_prev)
    result: dict[str, Momentum] = {}
    for slug, c in counts.items():
        q = adjusted.get(slug)
        result[slug] = Momentum(
            count_4w=c.recent,
            count_prev_4w=c.previous,
            change_pct=change_pct(c.recent, c.previous),
            share_pct=round(100.0 * c.recent / total_recent, 2) if total_recent else 0.0,
            spiking=rule.holds(q, c.recent, share_rise_pct(c, total_recent, total_prev)),
            p_value=q,
            weekly=tuple(c.weekly),
        )
    return result


def change_pct(recent: int, previous: int) -> float | None:
    """Percentage change, rounded to a whole percent; None when `previous` is 0."""
    if previous == 0:
        return None
    return float(round((recent - previous) * 100 / previous))


# --- wording --------------------------------------------------------------------------


def format_share(share_pct: float) -> str:
    """'0.7%', '12%'; tiny non-zero shares read 'under 0.1%' rather than '0.0%'."""
    if 0 < share_pct < 0.05:
        return "under 0.1%"
    if share_pct >= 10:
        return f"{share_pct:.0f}%"
    return f"{share_pct:.1f}%"


def momentum_line(m: Momentum, universe: str = "") -> str:
    """The reference page's sentence, e.g. '70 papers in the last four weeks, up 141% on
    the four weeks before. 0.7% of all new papers.' `universe` names the archives
    ('cs, stat and eess') when given."""
    papers = "paper" if m.count_4w == 1 else "papers"
    head = f"{m.count_4w} {papers} in the last four weeks"
    if m.count_4w == 0 and m.count_prev_4w == 0:
        return "No new papers in the last eight weeks."
    if m.change_pct is None:
        trend = "new this month"
    elif m.change_pct > 0:
        trend = f"up {m.change_pct:.0f}% on the four weeks before"
    elif m.change_pct < 0:
        trend = f"down {-m.change_pct:.0f}% on the four weeks before"
    else:
        trend = "unchanged on the four weeks before"
    of_all = f"of all new {universe} papers" if universe else "of all new papers"
    return f"{head}, {trend}. {format_share(m.share_pct)} {of_all}."


def archive_of(category: str) -> str:
    """'cs.LG' -> 'cs', 'hep-th' -> 'hep-th', 'math.AG' -> 'math'."""
    return category.split(".", 1)[0].strip()


def universe_phrase(archive_counts: Mapping[str, int] | Iterable[tuple[str, int]]) -> str:
    """'cs, stat and eess' from archive counts (largest first); '' when too many or none."""
    items: Iterable[tuple[str, int]] = (
        archive_counts.items() if isinstance(archive_counts, Mapping) else archive_counts
    )
    ranked: list[str] = [
        str(a) for a, n in sorted(items, key=lambda kv: (-kv[1], kv[0])) if a and n > 0
    ]
    if not ranked or len(ranked) > 4:
        return ""
    if len(ranked) == 1:
        return ranked[0]
    return ", ".join(ranked[:-1]) + " and " + ranked[-1]
