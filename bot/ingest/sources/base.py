"""The small protocol every source implements (the registry is bot.ingest.sources.registry).

A source reads its stored state (cursor, ETag, facts) and yields `Batch`es: a bounded
list of papers plus the state to store once that batch is persisted. Poll stores each
batch and its state in one transaction, so a cursor never moves past unstored papers.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.config import Settings
from bot.ingest.http import HttpDeps
from bot.types import PaperRecord

BATCH_SIZE = 500  # papers per batch: bounds memory and the size of one transaction


@dataclass(frozen=True, slots=True)
class StoredState:
    """What a source reads back from `source_state` at the start of a poll."""

    cursor: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Skip:
    """Entries or a page left out, with where and why (logged once, counted `count` times)."""

    where: str
    reason: str
    count: int = 1


@dataclass(slots=True)
class Batch:
    """Papers to persist, then the state to store with them (None = leave as is)."""

    papers: list[PaperRecord]
    cursor: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    data: dict[str, Any] | None = None  # merged into the stored data
    skipped: list[Skip] = field(default_factory=list)
    progress: tuple[int, int] | None = None  # (done, total) for progress bars


class Source(Protocol):
    """A paper source. `fetch` streams batches; it never holds a whole poll in memory."""

    name: str

    def fetch(self, state: StoredState) -> AsyncIterator[Batch]: ...


@dataclass(frozen=True, slots=True)
class SourceContext:
    """What a factory may use: settings, the shared HTTP deps, the categories to poll."""

    settings: Settings
    http: HttpDeps
    categories: tuple[str, ...]


SourceFactory = Callable[[str, SourceContext], Source]
