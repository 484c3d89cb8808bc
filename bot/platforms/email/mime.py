"""MIME from an email payload: the exact bytes sent, optionally DKIM-signed. Pure.

`build_message` turns a payload (`{"to","subject","text","html","headers"}`) into
multipart/alternative, text first and HTML last, each part UTF-8 in base64 (lines of 76
characters, CRLF line breaks inside as RFC 2045 asks of text). Headers are folded as RFC 5322 asks
(lines of at most 78 characters wherever a space allows; never above SMTP's 998), and
non-ASCII text becomes RFC 2047 encoded-words of at most 75 characters each, one per
line. The DKIM signature is computed over those final bytes, so a relay has no reason
to refold what was signed. CR/LF in any header value is refused with
`HeaderInjectionError` before anything is folded.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from email.utils import format_datetime, formataddr, parseaddr
from pathlib import Path
from typing import Any

import dkim
import numpy as np

from bot.config import Settings
from bot.errors import ConfigError, PapertideError

# 998 is SMTP's hard line limit; 78 is RFC 5322's "SHOULD" for header lines, and 75
# RFC 2047's limit for one encoded-word.
_MAX_LINE = 998
_FOLD_AT = 78
_MAX_WORD = 75
_WORD_OVERHEAD = len("=?utf-8?b??=")
FOLD = "\r\n "
CRLF = b"\r\n"
_B64_LINE = 76  # RFC 2045: base64 lines of at most 76 characters
# A base64 line as one record: 76 characters, then CRLF as one little-endian uint16.
# Filling records copies a line at a time; a (rows, 78) byte grid went byte by byte.
_LINE = np.dtype(
    {"names": ["chars", "crlf"], "formats": [f"V{_B64_LINE}", "<u2"],
     "offsets": [0, _B64_LINE], "itemsize": _B64_LINE + 2}
)  # fmt: skip
_CRLF_U16 = int.from_bytes(CRLF, "little")
_SIGNED_HEADERS = (
    b"From", b"To", b"Subject", b"Date", b"Message-ID", b"MIME-Version", b"Content-Type",
    b"List-Id", b"List-Unsubscribe", b"List-Unsubscribe-Post",
)  # fmt: skip


class HeaderInjectionError(PapertideError):
    """A header value would smuggle in another header (CR/LF) or is not an address."""


@dataclass(frozen=True, slots=True)
class DkimKey:
    selector: str
    domain: str
    private_key: bytes

    @classmethod
    def from_settings(cls, settings: Settings) -> DkimKey | None:
        """The configured key, or None when DKIM signing is off."""
        if not settings.dkim_private_key_file:
            return None
        if not settings.dkim_selector or not settings.dkim_domain:
            raise ConfigError(
                "DKIM needs PAPERTIDE_DKIM_SELECTOR and PAPERTIDE_DKIM_DOMAIN with the key",
                variable="PAPERTIDE_DKIM_SELECTOR",
            )
        path = Path(settings.dkim_private_key_file)
        try:
            key = path.read_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read DKIM key {path}: {exc.strerror}",
                variable="PAPERTIDE_DKIM_PRIVATE_KEY_FILE",
            ) from exc
        return cls(settings.dkim_selector, settings.dkim_domain, key)


def check_header(name: str, value: str) -> str:
    """`value` unchanged, or a HeaderInjectionError when it holds a line break."""
    if "\r" in value or "\n" in value or "\x00" in value:
        raise HeaderInjectionError(f"header {name} contains a line break; refusing to send")
    return value


# RFC 5322 field names: printable ASCII but the colon; anything else is refused.
_FIELD_NAME = re.compile(r"[!-9;-~]+")
_BARE_ADDRESS = re.compile(r"[^\s@<>()\[\],;:\\\"]+@[^\s@<>()\[\],;:\\\"]+")


def check_address(name: str, value: str) -> str:
    """The bare address of `value`, or a HeaderInjectionError when it is not one."""
    check_header(name, value)
    if _BARE_ADDRESS.fullmatch(value):
        return value  # the common case, without the stdlib's slow address parser
    address = parseaddr(value)[1]
    if "@" not in address or any(c.isspace() for c in address):
        raise HeaderInjectionError(f"header {name} is not an email address: {value!r}")
    return address


@functools.lru_cache(maxsize=16)
def _check_from(mail_from: str) -> str:
    return check_address("From", mail_from)


def message_id_for(key: str, domain: str) -> str:
    """A Message-ID stable per outbox key: a retried message keeps its id."""
    return f"<{hashlib.sha256(key.encode()).hexdigest()[:32]}@{domain}>"


def build_message(
    payload: dict[str, Any],
    *,
    mail_from: str,
    now: datetime,
    message_id: str,
    dkim_key: DkimKey | None = None,
) -> bytes:
    """The bytes of one mail: multipart/alternative (text, then HTML), signed if keyed.

    Assembled by hand with C-speed encoders: the stdlib's header objects cost
    milliseconds per mail, and each header here is known. Both parts are base64:
    `binascii.b2a_qp` costs about 7 ns a byte, base64 under 2.
    """
    _check_from(mail_from)
    to = str(payload["to"])
    check_address("To", to)  # refuses a line break too, as check_header does
    headers: Headers = [
        ("From", _from_header(mail_from)),
        ("To", fold("To", to)),
        ("Subject", fold("Subject", check_header("Subject", str(payload["subject"])))),
        ("Date", _date(now.replace(microsecond=0))),
        ("Message-ID", check_header("Message-ID", message_id)),
    ]
    for name, value in dict(payload.get("headers") or {}).items():
        name = check_header("header name", str(name))
        if not _FIELD_NAME.fullmatch(name):
            raise HeaderInjectionError(f"header name {name!r} is not printable ASCII")
        headers.append((name, fold(name, check_header(name, str(value)))))
    headers.append(("MIME-Version", "1.0"))
    text = _base64_lines(str(payload["text"]))
    html = str(payload.get("html") or "")
    body: list[bytes | memoryview]
    if html:
        boundary = f"=_pt_{secrets.token_hex(12)}"
        headers.append(("Content-Type", f'multipart/alternative; boundary="{boundary}"'))
        delimiter = f"--{boundary}\r\n".encode()
        body = [delimiter, _PART_HEAD["text/plain"], *text, CRLF]
        body += [delimiter, _PART_HEAD["text/html"], *_base64_lines(html), CRLF]
        body.append(f"--{boundary}--\r\n".encode())
    else:
        headers += _part_headers("text/plain")
        body = text
    for name, value in headers:
        # Only a header longer than a line in all can hold a line that is too long.
        if len(name) + 2 + len(value) > _MAX_LINE and any(
            len(line) + len(name) + 2 > _MAX_LINE for line in value.split("\r\n")
        ):
            raise HeaderInjectionError(f"header {name} is longer than one SMTP line")
    raw = b"".join([_head(headers), CRLF, *body])  # the one copy of the bodies
    if dkim_key is None:
        return raw
    present = [h for h in _SIGNED_HEADERS if any(n == h.decode() for n, _ in headers)]
    signature = dkim.sign(
        raw,
        dkim_key.selector.encode(),
        dkim_key.domain.encode(),
        dkim_key.private_key,
        include_headers=present,
        canonicalize=(b"relaxed", b"relaxed"),
    )
    return bytes(signature) + raw


Headers = list[tuple[str, str]]


def _head(headers: Headers) -> bytes:
    # One join and one encode for the whole head, not one of each per header.
    return "".join([f"{n}: {v}\r\n" for n, v in headers]).encode("ascii")


def _part_headers(content_type: str) -> Headers:
    return [
        ("Content-Type", f"{content_type}; charset=utf-8"),
        ("Content-Transfer-Encoding", "base64"),
    ]


# The head of each part of a multipart mail, with the blank line that ends it.
_PART_HEAD = {t: _head(_part_headers(t)) + CRLF for t in ("text/plain", "text/html")}


def _base64_lines(text: str) -> list[bytes | memoryview]:
    """`text` as UTF-8 with CRLF line breaks (text's canonical form, RFC 2045), in
    base64 lines of 76 characters, each ending in CRLF; as buffers to join."""
    data = text.encode("utf-8")  # then bytes: str.replace is slow on non-Latin-1 text
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    flat = binascii.b2a_base64(data.replace(b"\n", CRLF), newline=False)
    rows, rest = divmod(len(flat), _B64_LINE)
    # Cut into lines with one numpy copy into records ending in CRLF: a Python slice
    # per line cost more than encoding the whole digest.
    grid = np.empty(rows, dtype=_LINE)
    grid["chars"] = np.frombuffer(flat, f"V{_B64_LINE}", rows)
    grid["crlf"] = _CRLF_U16
    lines: list[bytes | memoryview] = [grid.view(np.uint8).data]
    if rest:
        lines += [flat[rows * _B64_LINE :], CRLF]
    return lines


@functools.lru_cache(maxsize=4)
def _date(now: datetime) -> str:
    # Many mails go out within the same second: format that second once.
    return format_datetime(now)


def fold(name: str, value: str) -> str:
    """`value` ready to follow `name: `: ASCII folded at spaces so lines stay within 78
    characters where a space allows; anything else as encoded-words, one per line."""
    if not value.isascii():
        return encode_words(name, value)
    if len(name) + 2 + len(value) <= _FOLD_AT:
        return value  # one line already: the loop below would give it back unchanged
    line = f"{name}:"
    lines: list[str] = []
    for word in value.split(" "):
        # The first word always joins the name; an empty word (a double space) never
        # starts a line, which would then hold only whitespace.
        if line == f"{name}:" or not word or len(line) + 1 + len(word) <= _FOLD_AT:
            line += " " + word
        else:
            lines.append(line)
            line = " " + word
    lines.append(line)
    return "\r\n".join(lines)[len(name) + 2 :]


def encode_words(name: str, text: str) -> str:
    """RFC 2047 base64 encoded-words, each at most 75 characters and on its own line,
    the first one sized to fit after `name: ` within 78. Characters are never split
    across words (a decoder joins adjacent words back into the text)."""
    words: list[str] = []
    room = _FOLD_AT - len(name) - 2  # what the first line leaves for its word
    chunk = b""
    for char in text:
        data = char.encode("utf-8")
        limit = (min(room, _MAX_WORD) - _WORD_OVERHEAD) // 4 * 3  # bytes that fit
        if chunk and len(chunk) + len(data) > limit:
            words.append(_word(chunk))
            chunk, room = b"", _FOLD_AT - 1  # later lines start with one space
        chunk += data
    words.append(_word(chunk))
    return FOLD.join(words)


def _word(data: bytes) -> str:
    return "=?utf-8?b?" + base64.b64encode(data).decode("ascii") + "?="


@functools.lru_cache(maxsize=16)
def _from_header(mail_from: str) -> str:
    name, address = parseaddr(mail_from)
    name = name or "papertide"
    if name.isascii():
        return fold("From", formataddr((name, address)))
    return encode_words("From", name) + FOLD + f"<{address}>"
