"""A page rendered once with one open slot answers the very bytes a render would."""

from __future__ import annotations

import pytest

from bot.web.common import SlottedPage, page


@pytest.mark.parametrize(
    "manage_url",
    [
        "https://papers.example.org/manage/eyJwIjoxLCJ2Ijo3fQ.Z3x-aB_c.d9Xk",
        "https://papers.example.org/p?a=1&b=<\"'>/manage/x",  # everything autoescape touches
        None,  # no link: the page without its paragraph
    ],
)
def test_the_unsubscribed_page_is_the_rendered_page_byte_for_byte(manage_url: str | None) -> None:
    rendered = page("unsubscribed.html", private=True, manage_url=manage_url)
    slotted = SlottedPage("unsubscribed.html", "manage_url")
    for _ in range(2):  # the first answer renders, the second reuses
        answer = slotted.response(manage_url)
        assert answer.body == rendered.body
        assert answer.status == rendered.status
        assert answer.headers["Content-Type"] == rendered.headers["Content-Type"]
        assert answer.headers["Cache-Control"] == rendered.headers["Cache-Control"] == "no-store"


def test_a_template_that_shows_the_slot_twice_is_refused() -> None:
    slotted = SlottedPage("error.html", "title", message="m")  # the title shows twice
    with pytest.raises(AssertionError, match="once"):
        slotted.response("Not found")
