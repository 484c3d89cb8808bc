"""digests/gcpause.py: the collector is off inside, back on after (also on an error),
and a pause inside a pause (or with the collector already off) leaves it as it was."""

from __future__ import annotations

import gc

import pytest

from digests.gcpause import gc_paused


def test_the_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause does not end the outer one
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
