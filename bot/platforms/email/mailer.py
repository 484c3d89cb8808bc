"""SMTP at the edge: a few long-lived aiosmtplib connections shared by many sends.

`SmtpMailer` keeps connections open across messages, reconnects once when the server
dropped one, and maps SMTP replies to the outbox's results: 4xx is Retry, 5xx on a
recipient a hard bounce (the channel counts those). MIME building is `digests.mime`.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiosmtplib

from bot.config import Settings
from bot.outbox.channel import Delivered, DeliveryResult, Failed, Retry

log = logging.getLogger(__name__)


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
            except aiosmtplib.SMTPResponseException as exc:
                await _reset(client)
                return _by_code(exc.code, exc.message, hard=False)
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
    return _by_code(refusal.code, refusal.message, hard=True)


def _by_code(code: int, text: str, *, hard: bool) -> DeliveryResult:
    reason = f"{code} {' '.join(text.split())}"[:300]
    if 400 <= code < 500:
        return Retry(reason)
    # hard=True marks a 5xx about the recipient: the channel counts it as a hard bounce.
    return Failed(("hard bounce: " if hard else "rejected: ") + reason, disable_target=False)


async def _reset(client: aiosmtplib.SMTP) -> None:
    # After a refused transaction the connection stays usable once RSET succeeds.
    try:
        await client.rset()
    except aiosmtplib.SMTPException:
        client.close()
