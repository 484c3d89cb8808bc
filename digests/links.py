"""Links in a digest: a small port, so the web helper's signed tokens plug in at the root.

`DigestLinks` is what rendering consumes; `PublicLinks` builds absolute URLs from
`Settings.public_url` and an injected `token_for(recipient, purpose)` callable
(`links_for` signs with `bot.tokens` for the web app's routes; tests pass their own).
"""

from __future__ import annotations

from collections.abc import Callable
from email.utils import parseaddr
from typing import Protocol
from urllib.parse import quote

from bot.config import Settings
from bot.subscriptions.tokens import make_token
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

    def paper_url(self, paper_id: str, url: str) -> str:
        """Where a paper links to; `url` is the paper's own (arXiv abs) link."""
        ...


class PublicLinks:
    """`DigestLinks` under one public base URL, with paths the web app serves."""

    def __init__(
        self,
        public_url: str,
        token_for: TokenFor,
        *,
        mail_from: str,
        unsubscribe_path: str = "/unsubscribe/{token}",
        manage_path: str = "/manage/{token}",
        topic_path: str = "/topics/{slug}",
    ) -> None:
        self._base = public_url.rstrip("/")
        self._token_for = token_for
        self._from_address = parseaddr(mail_from)[1] or "papertide@localhost"
        self._unsubscribe = unsubscribe_path
        self._manage = manage_path
        self._topic = topic_path

    def unsubscribe_url(self, recipient: Recipient) -> str:
        token = quote(self._token_for(recipient, "unsubscribe"), safe="")
        return self._base + self._unsubscribe.format(token=token)

    def unsubscribe_mailto(self, recipient: Recipient) -> str:
        # The token rides in the subject so whatever reads that mailbox knows who it is.
        token = quote(self._token_for(recipient, "unsubscribe"), safe="")
        return f"mailto:{self._from_address}?subject=unsubscribe%20{token}"

    def manage_url(self, recipient: Recipient) -> str:
        token = quote(self._token_for(recipient, "manage"), safe="")
        return self._base + self._manage.format(token=token)

    def topic_url(self, slug: str) -> str:
        return self._base + self._topic.format(slug=quote(slug, safe=""))

    def paper_url(self, paper_id: str, url: str) -> str:
        return url or f"https://arxiv.org/abs/{quote(paper_id, safe='/.')}"


def links_for(settings: Settings) -> PublicLinks:
    """The production links: the web app's routes, tokens signed by `bot.tokens`."""

    def token_for(recipient: Recipient, purpose: str) -> str:
        return make_token(settings, person_id=recipient.id, email=recipient.email, purpose=purpose)

    return PublicLinks(settings.public_url, token_for, mail_from=settings.mail_from)
