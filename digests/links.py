"""Links in a digest: a small port, so signed tokens plug in at the root.

`DigestLinks` is what rendering consumes; `PublicLinks` builds absolute URLs with
bot.subscriptions.urls (the one place routes are spelled) and an injected
`token_for(recipient, purpose)` callable (`links_for` signs with
bot.subscriptions.tokens; tests pass their own).
"""

from __future__ import annotations

from collections.abc import Callable
from email.utils import parseaddr
from typing import Protocol
from urllib.parse import quote

from bot.config import Settings
from bot.store.records import abs_url
from bot.subscriptions.tokens import make_token
from bot.subscriptions.urls import PublicUrls
from digests.build import Recipient

TokenFor = Callable[[Recipient, str], str]


class DigestLinks(Protocol):
    """Every link a digest needs; all absolute."""

    def unsubscribe_url(self, recipient: Recipient) -> str:
        """One-click unsubscribe (https, RFC 8058 POST target and a landing page on GET)."""
        ...

    def unsubscribe_mailto(self, recipient: Recipient) -> str:
        """`mailto:` form of the unsubscribe link, for List-Unsubscribe."""
        ...

    def manage_url(self, recipient: Recipient) -> str: ...

    def topic_url(self, slug: str) -> str: ...

    def ask_url(self, slug: str) -> str:
        """The topic page's 'Ask about this topic' box."""
        ...

    def paper_url(self, paper_id: str, url: str) -> str:
        """Where a paper links to; `url` is the paper's own (arXiv abs) link."""
        ...

    def react_token(self, recipient: Recipient) -> str:
        """The recipient's `react` token (signed with their token version)."""
        ...

    def react_url(self, token: str, paper_id: str, leaning: str) -> str:
        """ "More / Less like this" (`leaning` is `more` or `less`) for the holder of
        `token`: a page with one button, since mail scanners follow every link."""
        ...

    def emerging_url(self) -> str:
        """The /emerging page: each rising phrase with its papers."""
        ...


class PublicLinks:
    """`DigestLinks` under one public base URL, on the routes the web app serves."""

    def __init__(self, public_url: str, token_for: TokenFor, *, mail_from: str) -> None:
        self._urls = PublicUrls(public_url)
        self._token_for = token_for
        self._from_address = parseaddr(mail_from)[1] or "papertide@localhost"

    def unsubscribe_url(self, recipient: Recipient) -> str:
        return self._urls.unsubscribe(self._token_for(recipient, "unsubscribe"))

    def unsubscribe_mailto(self, recipient: Recipient) -> str:
        # The token rides in the subject so whatever reads that mailbox knows who it is.
        token = quote(self._token_for(recipient, "unsubscribe"), safe="")
        return f"mailto:{self._from_address}?subject=unsubscribe%20{token}"

    def manage_url(self, recipient: Recipient) -> str:
        return self._urls.manage(self._token_for(recipient, "manage"))

    def topic_url(self, slug: str) -> str:
        return self._urls.topic(slug)

    def ask_url(self, slug: str) -> str:
        return self._urls.topic_ask_box(slug)

    def paper_url(self, paper_id: str, url: str) -> str:
        return url or abs_url(paper_id)

    def react_token(self, recipient: Recipient) -> str:
        return self._token_for(recipient, "react")

    def react_url(self, token: str, paper_id: str, leaning: str) -> str:
        return self._urls.react(token, paper_id, leaning)
        ...

    def emerging_url(self) -> str:
        return self._urls.emerging()


def links_for(settings: Settings) -> PublicLinks:
    """The production links: the web app's routes, tokens signed by `bot.tokens`."""

    def token_for(recipient: Recipient, purpose: str) -> str:
        return make_token(
            settings, person_id=recipient.id, version=recipient.token_version, purpose=purpose
        )

    return PublicLinks(settings.public_url, token_for, mail_from=settings.mail_from)
