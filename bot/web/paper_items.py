"""A topic page's papers as HTML: each paper's `<li>`, rendered once per content.

Rendering 30 papers with their authors, affiliations and tags (jinja2, every field
escaped) cost more than reading them. A paper's item depends on nothing but its row, so
`PaperItems` keeps each rendered item keyed by the row itself, every column the item is
made of as the driver returned it, tags included: a paper edited in any rendered way
(a repaired title, a new topic, a moved date) is a new key and renders afresh. The memo is
an LRU bounded twice: by `max_entries` items and by `max_bytes` of text held (the key's
text and the item's HTML). Most entries are a few KB, but a collaboration paper's row
carries its whole author list (3,000 authors: ~300 KB) though the item shows three
names; counted by entries alone, a crawler walking hep topics could make the memo hold
a gigabyte. Either way a crawler costs renders, never unbounded memory.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from markupsafe import Markup

from bot.templating import environment
from bot.web.topic_data import PaperRow, PaperView, TopicPage

ITEM_TEMPLATE = "web/paper_item.html"


def render_item(paper: PaperView) -> Markup:
    """One paper's `<li>` (templates/web/paper_item.html), escaped as the page would."""
    return Markup(environment().get_template(ITEM_TEMPLATE).render(p=paper))  # noqa: S704


def render_items(papers: Iterable[PaperView]) -> Markup:
    """Items of papers that are not rows of a page (a question's matches): no memo."""
    return Markup("").join(render_item(p) for p in papers)


def _held(row: PaperRow, item: str) -> int:
    """The characters an entry keeps alive: the row's text columns and the item."""
    return len(item) + sum(len(v) for v in row if isinstance(v, str))


class PaperItems:
    """Rendered items by row, least recently shown dropped first past `max_entries`
    items or `max_bytes` characters held."""

    def __init__(self, max_entries: int = 4096, max_bytes: int = 32 * 1024 * 1024) -> None:
        self._max = max_entries
        self._max_bytes = max_bytes
        self._bytes = 0
        self._items: OrderedDict[PaperRow, Markup] = OrderedDict()

    def items(self, page: TopicPage) -> Markup:
        """The page's items, newest paper first, as one piece of HTML (the template
        inserts it once, instead of once per paper); renders only rows not seen before."""
        out: list[str] = []
        for row in page.rows:
            item = self._items.get(row)
            if item is None:
                item = self._items[row] = render_item(page.view(row))
                self._bytes += _held(row, item)
                while len(self._items) > 1 and (
                    len(self._items) > self._max or self._bytes > self._max_bytes
                ):
                    old, dropped = self._items.popitem(last=False)
                    self._bytes -= _held(old, dropped)
            else:
                self._items.move_to_end(row)
            out.append(item)
        return Markup("".join(out))  # noqa: S704 (every part is a rendered, escaped item)

    def __len__(self) -> int:
        return len(self._items)

    @property
    def held(self) -> int:
        """Characters kept alive by the memo (its rows' text and items)."""
        return self._bytes
