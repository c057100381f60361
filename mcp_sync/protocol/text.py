"""Untrusted text made safe to show: control, format (bidi) and line-separator
characters escaped, so server text cannot move a cursor, recolour a terminal,
forge a log line or reorder what is shown. :func:`for_model` applies the same
rule to text bound for a model's prompt, and drops the characters that hide
text from a reader (Unicode tags, stacked variation selectors)."""

from __future__ import annotations

import re
import unicodedata
from urllib.parse import urlsplit

__all__ = ["MAX_URL_CHARS", "escape", "for_model", "valid_url"]

MAX_URL_CHARS = 8192

_ASCII_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")
_ASCII_UNSAFE_MULTILINE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# Characters that carry text no reader sees: the Unicode tag block
# (U+E0000-U+E007F, which mirrors ASCII and is read by some models as the
# letters it mirrors), and every variation selector after the first on one
# character (one selects an emoji's or an ideograph's form; a run of them
# encodes bytes). One pass, linear: each alternative is a single character
# class, and the lookbehind is one character wide.
_VS = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_HIDDEN = re.compile(f"[\U000e0000-\U000e007f]+|(?<=[{_VS}])[{_VS}]+")


def _escaped(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def escape(text: str, *, multiline: bool = False) -> str:
    """``text`` with every character that could act on a terminal escaped.

    Control characters (Cc: C0, DEL, C1), format characters (Cf: bidi
    overrides and isolates, zero-width marks), U+2028/U+2029 and lone
    surrogates become ``\\xNN``/``\\uNNNN``. With ``multiline``, newline and
    tab are kept.
    """
    if text.isascii():
        pattern = _ASCII_UNSAFE_MULTILINE if multiline else _ASCII_UNSAFE
        return pattern.sub(lambda m: _escaped(m.group()), text)
    # str.isprintable() is false for every character escaped below (and a
    # few it keeps): when it holds, nothing needs the per-character walk.
    probe = text.replace("\n", " ").replace("\t", " ") if multiline else text
    if probe.isprintable():
        return text
    out = []
    for ch in text:
        if multiline and ch in "\n\t":
            out.append(ch)
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
            out.append(_escaped(ch))
        else:
            out.append(ch)
    return "".join(out)


def for_model(text: str) -> str:
    """Untrusted text (a server's instructions, a tool's description) as it
    may stand in a model's prompt.

    Line ends (CRLF, CR) become newlines; Unicode tag characters and stacked variation
    selectors are dropped (they spell text the reader cannot see); every other
    control, format (bidi, zero-width) and line-separator character is escaped
    as :func:`escape` does for a terminal, so it shows instead of acting.
    Newlines and tabs are kept.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.isascii():
        text = _HIDDEN.sub("", text)
    return escape(text, multiline=True)


def valid_url(url: str) -> bool:
    """An absolute http(s) URL of at most ``MAX_URL_CHARS`` characters, without
    control characters or spaces: one a user may be shown and sent to."""
    if len(url) > MAX_URL_CHARS or any(ord(ch) < 0x20 or ord(ch) == 0x7F or ch.isspace() for ch in url):
        return False
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
