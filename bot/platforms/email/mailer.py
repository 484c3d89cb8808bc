"""SMTP at the edge: a few long-lived aiosmtplib connections shared by many sends.

`SmtpMailer` keeps connections open across messages, reconnects once when the server
dropped one, and maps SMTP replies to the outbox's results: 4xx is Retry, 5xx on a
recipient a hard bounce (the channel counts those). MIME building is `mime.py`.

A 5xx that says our side is misconfigured (authentication required or failed, the
relay refusing to relay, any refusal of our MAIL FROM) would otherwise kill every
confirmation mail and digest on its first try, and count bounces against innocent
addresses: it is a Retry after CONFIG_RETRY_SECONDS instead, its reason starting with
CONFIG_PROBLEM so `outbox stats` and `status` can tell the operator.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiosmtplib

from bot.config import Settings
from bot.outbox.channel import CONFIG_PROBLEM, Delivered, DeliveryResult, Failed, Retry

log = logging.getLogger(__name__)

CONFIG_RETRY_SECONDS = 900.0
# Authentication required / too weak / failed / needed for relaying (RFC 4954).
_AUTH_CODES = frozenset({530, 534, 535, 538})


class SmtpMailer:
    """A few long-lived SMTP connections shared by many sends (one transaction each)."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        username: str | None = None,
        password: str | None = None,
        starttls: bool = False,
        tls: bool = False,
        timeout: float = 30.0,
        connections: int = 1,
    ) -> None:
        self._options: dict[str, Any] = {
            "hostname": host,
            "port": port,
            "username": username,
            "password": password,
            "use_tls": tls,
            "start_tls": starttls,
            "timeout": timeout,
        }
        self._idle: asyncio.Queue[aiosmtplib.SMTP] = asyncio.Queue()
        for _ in range(max(1, connections)):
            self._idle.put_nowait(aiosmtplib.SMTP(**self._options))

    @classmethod
    def from_settings(cls, settings: Settings, *, connections: int = 1) -> SmtpMailer:
        password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
        return cls(
            host=settings.smtp_host,
            port=settings.smtp_port,
            username=settings.smtp_username,
            password=password,
            starttls=settings.smtp_starttls,
            tls=settings.smtp_tls,
            connections=connections,
        )

    async def send(self, *, sender: str, recipient: str, message: bytes) -> DeliveryResult:
        """One SMTP transaction; never raises for SMTP trouble, returns what happened."""
        client = await self._idle.get()
        try:
            return await self._send_on(client, sender, recipient, message)
        finally:
            self._idle.put_nowait(client)

    async def _send_on(
        self, client: aiosmtplib.SMTP, sender: str, recipient: str, message: bytes
    ) -> DeliveryResult:
        last = ""
        for attempt in (1, 2):
            try:
                if not client.is_connected:
                    await client.connect()
                _, reply = await client.sendmail(sender, [recipient], message)
                return Delivered(remote_id=reply.strip()[:200] or None)
            except aiosmtplib.SMTPRecipientsRefused as exc:
                await _reset(client)
                return _refused(exc.recipients[0] if exc.recipients else None)
            except aiosmtplib.SMTPSenderRefused as exc:
                await _reset(client)
                return classify(exc.code, exc.message, stage="sender")
            except aiosmtplib.SMTPResponseException as exc:
                await _reset(client)
                return classify(exc.code, exc.message, stage="data")
            except (aiosmtplib.SMTPServerDisconnected, aiosmtplib.SMTPConnectError, OSError) as exc:
                # A relay drops idle connections; reconnect once before giving up for now.
                client.close()
                log.info("smtp.reconnect", extra={"attempt": attempt, "error": str(exc)})
                last = f"SMTP connection failed: {exc}"
            except aiosmtplib.SMTPException as exc:
                client.close()
                last = f"SMTP error: {exc}"
        return Retry(last)

    async def close(self) -> None:
        """Say QUIT on every open connection."""
        while not self._idle.empty():
            client = self._idle.get_nowait()
            if client.is_connected:
                try:
                    await client.quit()
                except aiosmtplib.SMTPException:
                    client.close()


def _refused(refusal: aiosmtplib.SMTPRecipientRefused | None) -> DeliveryResult:
    if refusal is None:
        return Retry("recipient refused without a reply")
    return classify(refusal.code, refusal.message, stage="recipient")


def classify(code: int, text: str, *, stage: str) -> DeliveryResult:
    """The outbox's result for an SMTP reply at `stage` ("sender", "recipient", "data";
    "data" also stands for the connection's own replies: greeting, AUTH)."""
    reason = f"{code} {' '.join(text.split())}"[:300]
    if 400 <= code < 500:
        return Retry(reason)
    if _misconfigured(code, reason, stage):
        log.warning("smtp.configuration_problem", extra={"stage": stage, "reply": reason})
        return Retry(f"{CONFIG_PROBLEM}{reason}", after=CONFIG_RETRY_SECONDS)
    if stage == "recipient":  # a 5xx about the recipient: the channel counts a hard bounce
        return Failed("hard bounce: " + reason, disable_target=False)
    return Failed("rejected: " + reason, disable_target=False)


def _misconfigured(code: int, reason: str, stage: str) -> bool:
    if code in _AUTH_CODES or stage == "sender":
        return True  # our credentials or our MAIL FROM: the same for every recipient
    # "554 5.7.1 <x@y>: Relay access denied" arrives at RCPT, about every recipient.
    return "relay" in reason.lower() and ("denied" in reason.lower() or "5.7.1" in reason)


async def _reset(client: aiosmtplib.SMTP) -> None:
    # After a refused transaction the connection stays usable once RSET succeeds.
    try:
        await client.rset()
    except aiosmtplib.SMTPException:
        client.close()
