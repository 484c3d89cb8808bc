"""A rendered section cut into its frame and its paper rows, so sections can be
assembled from fragments rendered once per run.

A ranked digest picks and orders each section's papers for its reader, so readers who
follow the same topic rarely share a section, and rendering it (Jinja, then CSS
inlining) per reader cost more than the ranking. A row's markup depends on its paper
alone (no row-position selectors, no loop counters) and the frame on the section and
how many rows it holds, so each is kept from the first section that has it, and a
reader's section is the frame around their rows in their order.
"""

from __future__ import annotations

_ROW = {"html": '<tr><td class="paper"', "txt": "\n\n- "}


def split(
    fragment: str, ext: str, rows: int, *, lines: int = 5, last: str = "  less like this: "
) -> tuple[str, list[str], str] | None:
    """(before the rows, each row, after the rows) of a section fragment with `rows`
    paper rows; None when they cannot be told apart safely (then nothing is kept).
    A text row has `lines` lines, its last starting with `last`."""
    mark = _ROW[ext]
    first = fragment.find(mark)
    if first < 0 or rows == 0:
        return None
    if ext == "txt":
        pieces = fragment[first:].split(mark)[1:]
        if len(pieces) != rows or any(p.count("\n") != lines - 1 for p in pieces[:-1]):
            return None
        tail = pieces[-1].split("\n")
        # Checked, not assumed: a row's fields are one line each (titles are joined to
        # one line), the newline after its last belongs to what follows (as the mark's
        # first does), and the section's closing lines never start indented.
        if len(tail) <= lines or not tail[lines - 1].startswith(last) or tail[lines][:1] == " ":
            return None
        pieces[-1] = "\n".join(tail[:lines])
        return fragment[:first], [mark + p for p in pieces], "\n" + "\n".join(tail[lines:])
    end = fragment.find("</tbody>", first)
    if end < 0:
        return None
    pieces = fragment[first:end].split(mark)
    if len(pieces) != rows + 1 or pieces[0]:
        return None
    return fragment[:first], [mark + p for p in pieces[1:]], fragment[end:]
