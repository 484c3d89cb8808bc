"""Readers' models kept between digest runs: a reader is retrained only when what their
model learned from changed, told by a fingerprint of their signals (marks, follows,
alerts) that the caller builds. In memory, bounded, for as long as the vocabulary the
models' columns refer to (bot/taste/features.py `Vocabulary`) lives. Pure: no I/O.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable

from bot.taste.features import Vocabulary
from bot.taste.model import Model

MAX_MODELS = 50_000  # a model is at most MAX_WEIGHTS columns, 8 bytes each: <= 8 KB


class Models:
    """Each reader's newest model and the fingerprint it was trained for."""

    def __init__(self, vocabulary: Vocabulary, *, limit: int = MAX_MODELS) -> None:
        self.vocabulary = vocabulary
        self._kept: OrderedDict[Hashable, tuple[Hashable, Model]] = OrderedDict()
        self._limit = limit
        self.trained = 0  # models trained through `get_or_train`, for tests and logs
        # Trained here since the last `take_fresh`: the caller stores them, so another
        # process (or this one after a restart) finds them instead of training.
        self._fresh: dict[Hashable, tuple[Hashable, Model]] = {}

    def held(self, reader: Hashable) -> Hashable | None:
        """The fingerprint of the reader's kept model (None: none kept)."""
        found = self._kept.get(reader)
        return None if found is None else found[0]

    def keep(self, reader: Hashable, fingerprint: Hashable, model: Model) -> None:
        """Keep a model trained elsewhere (stored) for `fingerprint`."""
        self._kept[reader] = (fingerprint, model)
        self._kept.move_to_end(reader)
        if len(self._kept) > self._limit:
            self._kept.popitem(last=False)

    def take_fresh(self) -> list[tuple[Hashable, Hashable, Model]]:
        """(reader, fingerprint, model) of the models trained since the last call."""
        fresh = [(r, f, m) for r, (f, m) in self._fresh.items()]
        self._fresh.clear()
        return fresh

    def get_or_train(
        self, reader: Hashable, fingerprint: Hashable, train: Callable[[], Model | None]
    ) -> Model | None:
        """The reader's kept model if trained for `fingerprint`, else `train()`'s
        (kept; None, a reader with nothing to learn from, is not)."""
        found = self._kept.get(reader)
        if found is not None and found[0] == fingerprint:
            self._kept.move_to_end(reader)
            return found[1]
        model = train()
        self.trained += 1
        if model is None:
            self._kept.pop(reader, None)
            self._fresh.pop(reader, None)
            return None
        self.keep(reader, fingerprint, model)
        if len(self._fresh) >= self._limit:
            self._fresh.clear()  # nobody takes them (a bench, a test): stay bounded
        self._fresh[reader] = (fingerprint, model)
        return model

    def __len__(self) -> int:
        return len(self._kept)
