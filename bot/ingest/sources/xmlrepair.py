"""Repair what makes a whole XML document unreadable because of one entry's text.

One title with a lone surrogate (`&#xD800;`) or a raw control byte makes an XML parser
refuse the whole page, and feedparser even crashes on the former. Both are replaced
(by U+FFFD or removed) so the page is read and the damaged text is just damaged text.
Only character references and bytes XML 1.0 forbids are touched: raw C0 controls can
never be part of a multi-byte UTF-8 sequence, so removing them cannot split one.
"""

from __future__ import annotations

import re

_CHAR_REF = re.compile(rb"&#(x[0-9A-Fa-f]+|[0-9]+);")
_REPLACEMENT = b"&#xFFFD;"
# C0 controls XML 1.0 forbids (tab, line feed and carriage return are allowed).
_BAD_BYTES = bytes(b for b in range(0x20) if b not in (0x09, 0x0A, 0x0D))


def _allowed(code: int) -> bool:
    return (
        code in (0x9, 0xA, 0xD)
        or 0x20 <= code <= 0xD7FF
        or 0xE000 <= code <= 0xFFFD
        or 0x10000 <= code <= 0x10FFFF
    )


def _fix_ref(match: re.Match[bytes]) -> bytes:
    digits = match.group(1)
    if len(digits) > 9:  # beyond U+10FFFF whatever it says (and cheap to refuse)
        return _REPLACEMENT
    code = int(digits[1:], 16) if digits[:1] == b"x" else int(digits)
    return match.group(0) if _allowed(code) else _REPLACEMENT


def repair_xml(body: bytes) -> bytes:
    """`body` with forbidden character references replaced and forbidden C0 bytes removed."""
    if b"&#" in body:
        body = _CHAR_REF.sub(_fix_ref, body)
    return body.translate(None, _BAD_BYTES)
