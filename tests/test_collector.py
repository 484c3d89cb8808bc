"""bot/collector.py: the collector is off inside a pause, back on after (also on an error),
a pause inside a pause (or with the collector already off) leaves it as it was, and the
process's thresholds are raised, never lowered."""

from __future__ import annotations

import gc

import pytest

from bot import collector


def test_the_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause does not end the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with collector.paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()


def test_the_thresholds_are_raised_and_never_lowered() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        collector.raise_thresholds()
        assert gc.get_threshold() == collector.THRESHOLDS
        gc.set_threshold(100_000, 10, 10)
        collector.raise_thresholds()
        assert gc.get_threshold() == (100_000, 20, 10)
    finally:
        gc.set_threshold(*before)


def test_what_is_kept_forever_leaves_the_collectors_passes() -> None:
    kept = [object() for _ in range(10)]
    before = gc.get_freeze_count()
    try:
        collector.keep_forever()
        assert gc.get_freeze_count() >= before + len(kept)
    finally:
        gc.unfreeze()
