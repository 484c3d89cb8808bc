"""Momentum against hand-computed cases: windows, wording, the exact binomial test, BH."""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from math import comb

import pytest

from bot.catalog.momentum import (
    DigestError,
    Momentum,
    SpikeRule,
    TopicCounts,
    benjamini_hochberg,
    binomial_sf,
    change_pct,
    chart_weeks,
    compute_momentum,
    digest_as_of,
    iso_week_of,
    last_complete_week,
    momentum_line,
    momentum_windows,
    universe_phrase,
)


def exact_sf(k: int, n: int, p: Fraction) -> float:
    return float(sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1)))


def m(recent: int, previous: int, share: float = 0.7) -> Momentum:
    return Momentum(recent, previous, change_pct(recent, previous), share, False, None, (0,) * 12)


def test_reference_page_sentence() -> None:
    counts = {"rl-for-llm-agents": TopicCounts(70, 29)}
    result = compute_momentum(counts, total_recent=10_000, total_prev=9_000, rule=SpikeRule())
    rl = result["rl-for-llm-agents"]
    assert (rl.change_pct, rl.share_pct) == (141.0, 0.7)
    assert momentum_line(rl) == (
        "70 papers in the last four weeks, up 141% on the four weeks before. "
        "0.7% of all new papers."
    )
    assert momentum_line(rl, "cs, stat and eess").endswith(
        "0.7% of all new cs, stat and eess papers."
    )


@pytest.mark.parametrize(
    ("recent", "previous", "expected"),
    [
        (
            22,
            25,
            "22 papers in the last four weeks, down 12% on the four weeks before. "
            "0.7% of all new papers.",
        ),
        (5, 0, "5 papers in the last four weeks, new this month. 0.7% of all new papers."),
        (1, 0, "1 paper in the last four weeks, new this month. 0.7% of all new papers."),
        (
            8,
            8,
            "8 papers in the last four weeks, unchanged on the four weeks before. "
            "0.7% of all new papers.",
        ),
        (0, 0, "No new papers in the last eight weeks."),
    ],
)
def test_wording(recent: int, previous: int, expected: str) -> None:
    assert momentum_line(m(recent, previous)) == expected


def test_small_shares_never_read_zero() -> None:
    assert momentum_line(m(1, 1, share=0.01)).endswith("under 0.1% of all new papers.")
    assert momentum_line(m(1, 1, share=23.4)).endswith("23% of all new papers.")


def test_windows_and_iso_weeks() -> None:
    as_of = digest_as_of("2026-W39")
    assert as_of == datetime(2026, 9, 28, tzinfo=UTC)  # the Monday that ends W39
    assert momentum_windows(as_of) == (
        datetime(2026, 8, 3, tzinfo=UTC), datetime(2026, 8, 31, tzinfo=UTC), as_of,
    )  # fmt: skip
    weeks = chart_weeks(as_of)
    assert len(weeks) == 12
    assert weeks[-1] == datetime(2026, 9, 21, tzinfo=UTC)  # W39 itself is the last bar
    assert weeks[0] == datetime(2026, 7, 6, tzinfo=UTC)
    # As of "now" mid-week, the current partial week is the last bar.
    assert chart_weeks(datetime(2026, 9, 30, 15, tzinfo=UTC))[-1] == datetime(
        2026, 9, 28, tzinfo=UTC
    )
    assert digest_as_of("2020-W53") == datetime(2021, 1, 4, tzinfo=UTC)
    assert iso_week_of(datetime(2021, 1, 3, 23, tzinfo=UTC)) == "2020-W53"
    assert last_complete_week(datetime(2026, 9, 28, 0, tzinfo=UTC)) == "2026-W39"
    assert last_complete_week(datetime(2026, 9, 27, 23, 59, tzinfo=UTC)) == "2026-W38"
    for bad in ("2026-W54", "2025-W53", "2026-39", "W39"):
        with pytest.raises(DigestError, match="not an ISO week"):
            digest_as_of(bad)


@pytest.mark.parametrize(
    ("k", "n", "p"),
    [(70, 99, Fraction(1, 2)), (6, 8, Fraction(1, 2)), (0, 5, Fraction(1, 3)),
     (5, 5, Fraction(1, 3)), (13, 40, Fraction(1, 10)), (1, 1, Fraction(9, 10)),
     (120, 200, Fraction(51, 100))],
)  # fmt: skip
def test_binomial_tail_matches_exact_rational_sum(k: int, n: int, p: Fraction) -> None:
    assert binomial_sf(k, n, float(p)) == pytest.approx(exact_sf(k, n, p), rel=1e-9, abs=1e-300)


def test_binomial_tail_stays_finite_for_large_counts() -> None:
    tiny = binomial_sf(9_000, 10_000, 0.5)
    assert 0.0 <= tiny < 1e-300
    assert binomial_sf(5_000, 10_000, 0.5) == pytest.approx(0.5039893, rel=1e-5)
    assert binomial_sf(11, 10, 0.5) == 0.0


def test_benjamini_hochberg_by_hand() -> None:
    # Sorted p: .01 .02 .03 .04 .05 (m=5): p*m/rank = .05 .05 .05 .05 .05
    assert benjamini_hochberg([0.04, 0.01, 0.05, 0.02, 0.03]) == pytest.approx([0.05] * 5)
    # .001*3/1=.003, .02*3/2=.03, .5*3/3=.5; monotone from the top.
    assert benjamini_hochberg([0.5, 0.001, 0.02]) == pytest.approx([0.5, 0.003, 0.03])
    # A large p-value ranked later can pull earlier ones down, never up: min over j >= i.
    assert benjamini_hochberg([0.04, 0.03]) == pytest.approx([0.04, 0.04])
    assert benjamini_hochberg([]) == []


def test_spike_needs_significance_count_and_share_rise() -> None:
    counts = {
        "surge": TopicCounts(70, 29),  # significant, big, +141%
        "tiny": TopicCounts(6, 2),  # +200% but too small and not significant
        "steady": TopicCounts(300, 290),
        "gone": TopicCounts(0, 10),
        "empty": TopicCounts(0, 0),
    }
    result = compute_momentum(counts, total_recent=10_000, total_prev=10_000, rule=SpikeRule())
    assert result["surge"].spiking
    assert not result["tiny"].spiking
    assert not result["steady"].spiking
    assert result["empty"].p_value is None
    assert not result["empty"].spiking
    # The reported p-value is BH-adjusted over the four tested topics.
    raw = binomial_sf(70, 99, 0.5)
    assert result["surge"].p_value is not None
    assert result["surge"].p_value >= raw
    # A rise driven by the whole corpus growing is not a spike: share is flat.
    grown = compute_momentum(
        {"t": TopicCounts(200, 100)}, total_recent=20_000, total_prev=10_000, rule=SpikeRule()
    )
    assert grown["t"].change_pct == 100.0
    assert not grown["t"].spiking
    strict = SpikeRule(alpha=0.01, min_count=100, min_rise_pct=50)
    assert not compute_momentum(counts, total_recent=10_000, total_prev=10_000, rule=strict)[
        "surge"
    ].spiking


def test_to_json_shape() -> None:
    got = compute_momentum(
        {"t": TopicCounts(70, 29, tuple(range(12)))}, total_recent=10_000, total_prev=9_000,
        rule=SpikeRule(),
    )["t"].to_json()  # fmt: skip
    assert set(got) == {
        "count_4w",
        "count_prev_4w",
        "change_pct",
        "share_pct",
        "spiking",
        "p_value",
        "weekly",
    }
    assert got["weekly"] == list(range(12))
    assert got["count_4w"] == 70
    assert got["spiking"] is True


def test_universe_phrase() -> None:
    assert universe_phrase({"cs": 900, "stat": 80, "eess": 40}) == "cs, stat and eess"
    assert universe_phrase({"cs": 5}) == "cs"
    assert universe_phrase({}) == ""
    assert universe_phrase({a: 1 for a in ("a", "b", "c", "d", "e")}) == ""
