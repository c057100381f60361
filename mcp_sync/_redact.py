"""Credential redaction and the bounded stderr tail.

A server's stderr is untrusted text that often carries secrets (tokens in
URLs, ``Authorization`` headers echoed by a debug log). Each complete line is
redacted first and only then measured and capped, so a cap can never cut a
credential in half and leave a recognisable prefix behind.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

__all__ = [
    "MAX_STDERR_LINE_BYTES",
    "DiagnosticEvent",
    "Diagnostics",
    "Redacted",
    "StderrTail",
    "redact",
]

T = TypeVar("T")

MAX_STDERR_LINE_BYTES = 64 * 1024
"""A stderr line longer than this is withheld whole, never partly shown."""

_MASK = "[REDACTED]"

# Each pattern matches the secret itself (group "s" when only part of the match
# is secret). Order matters only for overlapping shapes: specific before generic.
_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # URL userinfo: scheme://user:password@host -> scheme://[REDACTED]@host
        r"(?i)(?<=://)(?P<s>[^\s/@:]+(?::[^\s/@]*)?)(?=@)",
        # GitHub tokens (classic, OAuth, app, refresh) and fine-grained PATs.
        r"\b(?P<s>gh[pousr]_[A-Za-z0-9]{20,255})",
        r"\b(?P<s>github_pat_[A-Za-z0-9_]{20,255})",
        # OpenAI / Anthropic style secret keys: sk-..., sk-proj-..., sk-ant-...
        r"\b(?P<s>sk-[A-Za-z0-9_\-]{16,})",
        # Slack tokens: xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xoxe-
        r"\b(?P<s>xox[a-z]-[A-Za-z0-9\-]{8,})",
        # AWS access key ids and secrets written as key=value.
        r"\b(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16})\b",
        r"(?i)aws_secret_access_key[\"']?\s*[:=]\s*[\"']?(?P<s>[A-Za-z0-9/+=]{20,})",
        # JSON Web Tokens: three base64url segments, the first two JSON objects.
        r"\b(?P<s>eyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]*)",
        # Authorization: Bearer <token> (and Basic).
        r"(?i)\b(?:bearer|basic)\s+(?P<s>[A-Za-z0-9._~+/\-]+=*)",
        # key=value / key: value / "key": "value" for secret-looking keys.
        r"(?i)(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key|"
        r"client[_-]?secret|auth)[\"']?\s*[:=]\s*[\"']?(?P<s>[^\s\"'&,;]+)",
    )
)


def redact(text: str) -> str:
    """Return ``text`` with every recognised credential replaced by a mask."""
    for pattern in _PATTERNS:
        text = pattern.sub(_mask_secret, text)
    return text


def _mask_secret(match: re.Match[str]) -> str:
    start, end = match.span("s")
    whole_start, whole_end = match.span()
    s = match.string
    return s[whole_start:start] + _MASK + s[end:whole_end]


class Redacted(Generic[T]):
    """A private value that does not show itself.

    ``repr()`` and ``str()`` print only ``Redacted(...)``, so the value cannot
    leak through logging, tracebacks or an f-string by accident. Call
    :meth:`reveal` where you mean to look at it.
    """

    __slots__ = ("_value",)

    def __init__(self, value: T) -> None:
        self._value = value

    def reveal(self) -> T:
        """The wrapped value."""
        return self._value

    def __repr__(self) -> str:
        return "Redacted(...)"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Redacted value cannot be pickled")


@dataclass(frozen=True, slots=True)
class DiagnosticEvent:
    """One private diagnostic from a session.

    ``kind`` is ``"stderr"`` (``detail`` holds the redacted stderr tail, a
    ``str``), ``"remote-error"`` (``detail`` holds a dict with the
    ``code``, ``message`` and ``data`` of an error reply whose id was null) or
    ``"tool-rejected"`` (``detail`` holds a dict with the ``tool`` left out of
    the catalog and the ``reason``: its ``x-mcp-header`` declarations break
    the rules of the 2026-07-28 HTTP transport).
    """

    kind: Literal["stderr", "remote-error", "tool-rejected"]
    server: str
    detail: Redacted[Any]


Diagnostics = Callable[[DiagnosticEvent], None]


class StderrTail:
    """Keeps the redacted, whitespace-collapsed tail of a byte stream.

    Fed raw chunks by the stderr thread. Memory is bounded by
    ``MAX_STDERR_LINE_BYTES`` for the line being assembled plus ``max_bytes``
    for the kept tail.
    """

    def __init__(self, max_bytes: int) -> None:
        self._max = max_bytes
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._overlong = False  # the current line already passed the line cap
        self._lines: deque[str] = deque()
        self._kept = 0  # UTF-8 bytes in _lines, each line plus one separator

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._add_partial(chunk[start:])
                return
            self._add_partial(chunk[start:nl])
            self._finish_line()
            start = nl + 1

    def finish(self) -> None:
        """The stream ended: an unterminated last line is kept too."""
        if self._partial_len or self._overlong:
            self._finish_line()

    def text(self) -> str:
        """The tail: at most ``max_bytes`` UTF-8 bytes, newest last."""
        joined = " | ".join(self._lines)
        data = joined.encode("utf-8")
        if len(data) <= self._max:
            return joined
        return data[-self._max :].decode("utf-8", "ignore")

    def _add_partial(self, piece: bytes) -> None:
        if self._overlong or not piece:
            return
        if self._partial_len + len(piece) > MAX_STDERR_LINE_BYTES:
            self._overlong = True
            self._partial.clear()
            self._partial_len = 0
            return
        self._partial.append(piece)
        self._partial_len += len(piece)

    def _finish_line(self) -> None:
        if self._overlong:
            line = f"[a stderr line over {MAX_STDERR_LINE_BYTES} bytes was withheld]"
        else:
            raw = b"".join(self._partial).decode("utf-8", "replace")
            line = " ".join(redact(raw).split())
        self._partial.clear()
        self._partial_len = 0
        self._overlong = False
        if not line:
            return
        self._lines.append(line)
        self._kept += len(line.encode("utf-8")) + 3
        # Drop whole old lines while the rest alone still fills the budget.
        while self._lines and self._kept - (len(self._lines[0].encode("utf-8")) + 3) >= self._max:
            self._kept -= len(self._lines.popleft().encode("utf-8")) + 3
