"""The cyclic garbage collector paused while a batch of digests is built. Pure.

A batch of digests allocates hundreds of thousands of small objects (rankings, picks,
sections, pieces of mail) that live until its mails are enqueued. Each one counts
towards the collector's thresholds, so it would run its full collection several times
a batch, each time walking those objects and everything the process keeps (the
vocabulary, the models, the kept fragments): a fifth of a ranked batch's CPU in
bench/ranking.py. Paused, reference counting still frees the objects as they go; the
few cycles wait for the next collection after the pause, which the deferred counts
start at once.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block. Keep the block bounded (a batch):
    an `await` inside pauses the collector for the whole event loop meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
