"""CPython's cyclic garbage collector: the process's thresholds and bounded pauses.

The one owner of how papertide treats the collector. Reference counting frees almost
everything papertide allocates; the cyclic collector only matters for the rare cycle, but
each automatic collection walks the live objects of its generation, and a full one every
object of the process. Two hot paths hold many live objects for a bounded stretch:

- ingest keeps a page's records (tens of containers a paper: records, authors, tuples,
  rows) alive for its batch, and parsing a 2,000-entry page allocates ~100,000 acyclic
  objects: young collections walked them again and again (a third of the parse; 0.76 s
  of a 10,000-paper poll's 2.9 CPU seconds, bench/ingest.py, 0.13 s with the thresholds
  below);
- a batch of digests allocates hundreds of thousands of small objects (rankings, picks,
  sections, pieces of mail) that live until its mails are enqueued; full collections
  walked them and everything the process keeps (vocabulary, models, kept fragments): a
  fifth of a ranked batch's CPU in bench/ranking.py.

A long-running server also keeps what it built at startup (modules, settings, engines,
the app: ~150,000 objects) for its whole life; full passes walked it all and held a busy
server's every request for up to 0.3 s, its p99 (bench/web.py), hence `keep_forever`.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

# A young collection then walks at most ~50,000 objects (a few ms), rarely.
THRESHOLDS = (50_000, 20, 10)


def raise_thresholds() -> None:
    """Raise the collector's thresholds for this process (never lower them)."""
    current = gc.get_threshold()
    gc.set_threshold(*(max(a, b) for a, b in zip(current, THRESHOLDS, strict=True)))


@contextmanager
def paused() -> Iterator[None]:
    """No automatic cyclic collection inside the block; the previous state after it.

    Keep the block bounded (a page, a batch). Reference counting still frees objects as
    they go; the few cycles wait for the next collection, which the deferred counts start
    at once. An `await` inside pauses the collector for the whole event loop meanwhile.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def keep_forever() -> None:
    """Everything alive now lives as long as the process: out of the collector's passes."""
    gc.freeze()
