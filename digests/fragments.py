"""The rendered fragments of one run's digests: each rendered once, kept, and put
together per reader. Pure: strings in, strings out.

A fragment is a template of templates/email rendered with jinja2 (HTML then has its
CSS inlined and is made ASCII). `Fragments` keeps them in a bounded LRU cache, so
memory stays flat in the number of recipients; assembles a section whose papers are
the reader's own from the frame and rows cut from earlier sections
(digests/rows.py); and fills the reader's react token into every `REACT_SLOT`.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from jinja2 import Template

from bot.templating import environment, read_static
from digests.rows import split

# Stands for the recipient's react token in the shared, cached fragments; each digest
# puts its own token in (links stay per person, fragments stay shared).
REACT_SLOT = "ptslot3react"


class Fragments:
    """One run's kept fragments: the cache, the frames and rows, the cut slots."""

    def __init__(self, cache_size: int = 4096) -> None:
        self._cache: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._cache_size = cache_size
        # Ranked sections are assembled from these (digests/rows.py): a section's frame
        # by (ext, week, slug, rows, total, collapsed), a row by (ext, week, paper id,
        # alert hit); the missed section's likewise, its rows by (ext, "missed", week,
        # paper id).
        self.frames: dict[tuple[Any, ...], tuple[str, str]] = {}
        self.rows: dict[tuple[Any, ...], str] = {}
        # Every kept fragment (cached, frame or row) cut at the react slot, so a digest
        # fills its token in with joins instead of a search through the whole mail.
        self._cut: dict[str, tuple[str, ...]] = {}

    def __len__(self) -> int:
        """How many whole fragments the cache holds."""
        return len(self._cache)

    def cached(
        self,
        key: tuple[Any, ...],
        name: str,
        ext: str,
        context: Callable[..., dict[str, Any]],
        *args: Any,
    ) -> str:
        """The fragment `key`: template `name` rendered with `context(*args)`, which
        builds the template's data only on a miss."""
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        fragment = render_fragment(name, ext, context(*args))
        self.remember(key, fragment)
        return fragment

    def hit(self, key: tuple[Any, ...]) -> str | None:
        """The fragment kept as `key`, marked as just used; None when it is not kept."""
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
        return found

    def get(self, key: tuple[Any, ...]) -> str | None:
        """The fragment kept as `key`, if it is."""
        return self._cache.get(key)

    def remember(self, key: tuple[Any, ...], fragment: str) -> None:
        """Keep `fragment` as `key`, dropping the least recently used beyond the size."""
        self._cache[key] = fragment
        self.keep_cut(fragment)
        if len(self._cache) > self._cache_size:
            _, dropped = self._cache.popitem(last=False)
            # An equal fragment kept elsewhere only falls back to the search.
            self._cut.pop(dropped, None)

    def assembled(
        self,
        key: tuple[Any, ...],
        frame_key: tuple[Any, ...],
        row_keys: list[tuple[Any, ...]],
        name: str,
        context: Callable[..., dict[str, Any]],
        args: tuple[Any, ...],
        shape: dict[str, Any],
    ) -> list[str]:
        """The fragment `key` in pieces to join: from its frame and rows when all were
        seen in an earlier fragment (digests/rows.py), else rendered and cut into them
        for later ones."""
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return [found]
        frame = self.frames.get(frame_key)
        if frame is not None:
            rows = [self.rows.get(k) for k in row_keys]
            if all(r is not None for r in rows):
                return [frame[0], *(r for r in rows if r is not None), frame[1]]
        ext = frame_key[0]
        fragment = self.cached(key, name, ext, context, *args)
        cut = split(fragment, ext, len(row_keys), **shape)
        if cut is not None:
            before, rendered, after = cut
            self.frames[frame_key] = (before, after)
            self.rows.update(zip(row_keys, rendered, strict=True))
            self.keep_cut(before, after, *rendered)
        return [fragment]

    def keep_rows(
        self, fragment: str, ext: str, keys: list[tuple[Any, ...]], shape: dict[str, Any]
    ) -> None:
        """Keep the paper rows of `fragment` (rendered to give them) as `keys`."""
        cut = split(fragment, ext, len(keys), **shape)
        if cut is not None:
            self.rows.update(zip(keys, cut[1], strict=True))
            self.keep_cut(*cut[1])

    def keep_cut(self, *kept: str) -> None:
        """Remember `kept` fragments (and pieces of them) cut at the react slot."""
        for fragment in kept:
            self._cut[fragment] = tuple(fragment.split(REACT_SLOT))

    def filled(self, fragments: list[str], react: str) -> str:
        """`fragments` joined, the reader's react token in every slot: kept fragments
        by their cut pieces, any other (filled in per reader) by a search."""
        out = []
        for fragment in fragments:
            pieces = self._cut.get(fragment)
            out.append(
                react.join(pieces) if pieces is not None else fragment.replace(REACT_SLOT, react)
            )
        return "".join(out)


@functools.cache
def template(name: str) -> Template:
    """The template `name`, looked up once per process: jinja2's own cache would stat
    the file on every render."""
    return environment().get_template(name)


def render_fragment(name: str, ext: str, context: dict[str, Any]) -> str:
    """templates/email/`name`.`ext`.j2 rendered; HTML with its CSS inlined, in ASCII."""
    if ext == "txt":
        return template(f"email/{name}.txt.j2").render(**context)
    return _inline()(template(f"email/{name}.html.j2").render(**context))


def ascii_html(html: str) -> str:
    """`html` with every non-ASCII character as a character reference: the same page,
    and a one-byte-per-character string, so each digest's slot filling, size check
    and encoding run on half the memory of a string holding a dash or an accent."""
    return html if html.isascii() else html.encode("ascii", "xmlcharrefreplace").decode()


@functools.cache
def _inline() -> Callable[[str], str]:
    # css_inline is imported on first render, not when a command merely imports digests.
    import css_inline

    inliner = css_inline.CSSInliner(load_remote_stylesheets=False)
    css = read_static("email/digest.css")
    return lambda html: ascii_html(str(inliner.inline_fragment(html, css)))
