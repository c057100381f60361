"""Credential redaction, URL redaction for records, and the bounded stderr tail.

A server's stderr is untrusted text that often carries secrets (tokens in
URLs, ``Authorization`` headers echoed by a debug log). Each complete line is
redacted first and only then measured and capped, so a cap can never cut a
credential in half and leave a recognisable prefix behind.
"""

from __future__ import annotations

import functools
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

__all__ = [
    "MAX_STDERR_LINE_BYTES",
    "DiagnosticEvent",
    "Diagnostics",
    "InboundMessage",
    "KnownSecrets",
    "MessageHook",
    "Redacted",
    "StderrTail",
    "redact",
    "redact_url",
]

T = TypeVar("T")

MAX_STDERR_LINE_BYTES = 64 * 1024
"""A stderr line longer than this is withheld whole, never partly shown."""

_MASK = "[REDACTED]"

# Each pattern matches the secret itself (group "s" when only part of the match
# is secret). Order matters only for overlapping shapes: specific before generic.
#
# Every pattern must run in linear time on hostile input, because a server
# chooses its stderr: a match may begin only where a few fixed bytes stand,
# runs are possessive (``*+``, ``++``) so a failed attempt gives nothing back,
# and where a pattern could restart inside its own run the start is anchored
# to the run's beginning. tests/test_redact.py times each against near-misses.
#
# Each rule also names a few literal strings of which one must be present for
# the pattern to match at all (in the lower-cased text for case-insensitive
# rules): a ``str.find`` costs far less than a regex scan, so an ordinary
# line, and most hostile ones, run few or none of the patterns.
#
# Kept as source and compiled by the first redact(): compiling them all costs
# about 5 ms, which `import mcp_sync` should not pay.
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    # PEM private keys written on one line: everything up to the END marker.
    (r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----(?P<s>(?:(?!-----END)[\s\S])*+)", ("PRIVATE KEY",)),
    # URL userinfo: scheme://user:password@host -> scheme://[REDACTED]@host
    (r"(?<=://)(?P<s>[^\s/@:]++(?::[^\s/@]*+)?)(?=@)", ("://",)),
    # GitHub tokens (classic, OAuth, app, refresh) and fine-grained PATs.
    (r"\b(?P<s>gh[pousr]_[A-Za-z0-9]{20,255})", ("gh",)),
    (r"\b(?P<s>github_pat_[A-Za-z0-9_]{20,255})", ("github_pat_",)),
    # GitLab personal, project, trigger, deploy... tokens: glpat-, glptt-...
    (r"\b(?P<s>gl[a-z]{1,6}-[A-Za-z0-9_\-]{20,})", ("gl",)),
    # OpenAI / Anthropic style secret keys: sk-..., sk-proj-..., sk-ant-...
    (r"\b(?P<s>sk-[A-Za-z0-9_\-]{16,})", ("sk-",)),
    # Stripe secret and restricted keys.
    (r"\b(?P<s>[rs]k_(?:live|test)_[A-Za-z0-9]{10,})", ("k_live_", "k_test_")),
    # Slack tokens: xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xoxe-
    (r"\b(?P<s>xox[a-z]-[A-Za-z0-9\-]{8,})", ("xox",)),
    # Google API keys, npm and Hugging Face tokens, Twilio API keys.
    (r"\b(?P<s>AIza[A-Za-z0-9_\-]{35})", ("AIza",)),
    (r"\b(?P<s>npm_[A-Za-z0-9]{36})", ("npm_",)),
    (r"\b(?P<s>hf_[A-Za-z0-9]{30,})", ("hf_",)),
    (r"\b(?P<s>SK[0-9a-fA-F]{32})\b", ("SK",)),
    # SendGrid API keys: SG.<id>.<secret>
    (r"\b(?P<s>SG\.[A-Za-z0-9_\-]{16,}+\.[A-Za-z0-9_\-]{16,}+)", ("SG.",)),
    # AWS access key ids and secrets written as key=value.
    (
        r"\b(?P<s>(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA)[A-Z0-9]{16})\b",
        ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA"),
    ),
    (
        r"(?i)aws_secret_access_key[\"']?\s*+[:=]\s*+[\"']?(?P<s>[A-Za-z0-9/+=]{20,}+)",
        ("aws_secret_access_key",),
    ),
    # JSON Web Tokens: three base64url segments, the first two JSON objects.
    # Anchored to the start of a run so "eyJ-eyJ-eyJ-..." is scanned once.
    (
        r"(?<![A-Za-z0-9_\-])(?P<s>eyJ[A-Za-z0-9_\-]++\.eyJ[A-Za-z0-9_\-]++\.[A-Za-z0-9_\-]*+)",
        ("eyJ",),
    ),
    # Cookie and Set-Cookie headers: the whole value.
    (r"(?i)\b(?:set-)?cookie\s*+:\s*+(?P<s>[^\r\n]++)", ("cookie",)),
    # Authorization: <scheme> <credentials>, whatever the scheme ("token ..." too).
    (
        r"(?i)\b(?:proxy-)?authorization[\"']?\s*+[:=]\s*+[\"']?"
        r"(?:[A-Za-z][A-Za-z0-9_\-]*+\s++)?(?P<s>[^\s\"',;]++)",
        ("authorization",),
    ),
    # Bearer <token>, Basic <credentials> and DPoP-bound tokens anywhere.
    (
        r"(?i)\b(?:bearer|basic|dpop)\s++(?P<s>[A-Za-z0-9._~+/\-]++=*+)",
        ("bearer", "basic", "dpop"),
    ),
    # key=value / key: value / "key": "value" for secret-looking keys
    # (DB_PASS=, PGPASSWORD=, AccountKey=, SharedAccessKey=, sig=..., and
    # OAuth's codes, PKCE verifiers and assertions).
    (
        r"(?i)(?:password|passwd|pwd|pass|token|secret|api[_-]?key|access[_-]?key|"
        r"account[_-]?key|private[_-]?key|client[_-]?secret|credentials?|auth|sig|"
        r"verifier|assertion|\bcode)[\"']?\s*+[:=]\s*+[\"']?(?P<s>[^\s\"'&,;]++)",
        ("pass", "pwd", "token", "secret", "key", "credential", "auth", "sig", "verifier",
         "assertion", "code"),
    ),
)


@functools.cache
def _rules() -> tuple[tuple[re.Pattern[str], tuple[str, ...], bool], ...]:
    return tuple(
        (re.compile(pattern), triggers, pattern.startswith("(?i)")) for pattern, triggers in _RULES
    )


# A PEM private key over several lines: the lines between BEGIN and END.
_PEM_BEGIN = "-----BEGIN "
_PEM_KEY = "PRIVATE KEY-----"
_PEM_END = "-----END"


def redact(text: str, known: KnownSecrets | None = None) -> str:
    """Return ``text`` with every recognised credential replaced by a mask,
    and every value of ``known`` too."""
    folded: str | None = None
    for pattern, triggers, case_insensitive in _rules():
        if case_insensitive:
            if folded is None:
                folded = text.lower()
            haystack = folded
        else:
            haystack = text
        if not any(trigger in haystack for trigger in triggers):
            continue
        text, count = pattern.subn(_mask_secret, text)
        if count:
            folded = None
    if known is not None:
        text = known.mask(text)
    return text


URL_MASK = "REDACTED"
"""What :func:`redact_url` puts in place of userinfo and query values (the
word OpenTelemetry's semantic conventions use for ``url.full``)."""


def redact_url(url: str) -> str:
    """``url`` as it may be recorded (a span attribute, a log line): the
    user and password replaced by ``REDACTED:REDACTED``, every query and
    fragment value by ``REDACTED`` with its key kept
    (``https://REDACTED:REDACTED@host/p?sig=REDACTED&v=REDACTED``), and the
    path put through :func:`redact` for token shapes it holds. Any scheme
    (``https``, ``s3``, ``postgres``...); a string that does not parse as a
    URL is put through :func:`redact` whole."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url)
    netloc = parts.netloc
    userinfo, at, host = netloc.rpartition("@")
    if at:
        netloc = f"{URL_MASK}:{URL_MASK}@{host}" if ":" in userinfo else f"{URL_MASK}@{host}"
    # urlsplit keeps a path's "@" and ":" apart from the netloc; what is left
    # of the path may still hold a token (".../ghp_.../..."): redact() it.
    path = redact(parts.path) if parts.path else ""
    return urlunsplit(
        (parts.scheme, netloc, path, _masked_values(parts.query), _masked_values(parts.fragment))
    )


def _masked_values(pairs: str) -> str:
    """``k=v&k2=v2`` with each value masked; a bare ``k`` is kept as a key
    unless it has a secret's shape."""
    if not pairs:
        return pairs
    out = []
    for item in pairs.split("&"):
        key, eq, value = item.partition("=")
        if eq:
            out.append(f"{key}={URL_MASK}" if value else f"{key}=")
        else:
            out.append(redact(key))
    return "&".join(out)


MIN_KNOWN_SECRET = 4
"""A known value shorter than this is not masked: masking ``1`` or ``yes``
everywhere would hide the text without protecting anything."""


class KnownSecrets:
    """Literal values to mask wherever they appear (an ``env`` value, a
    config variable's expansion), longest first so a value that contains
    another is masked whole. One alternation: linear in the text."""

    __slots__ = ("_pattern",)

    def __init__(self, values: Iterable[str]) -> None:
        kept = sorted(
            {v for v in values if isinstance(v, str) and len(v) >= MIN_KNOWN_SECRET},
            key=len,
            reverse=True,
        )
        self._pattern = re.compile("|".join(map(re.escape, kept))) if kept else None

    def mask(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(_MASK, text)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __repr__(self) -> str:
        return "KnownSecrets(...)"


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


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message a server sent, as a session read it: past the inbound
    limits (frame size, depth, value count), before the session acts on it.

    ``message`` is the whole JSON-RPC frame, deep-frozen (read-only mappings,
    tuples for arrays), a copy of what the session goes on to use: nothing a
    hook does to it reaches the session. Untrusted: the ``repr`` shows only
    the server, the method and the id, escaped.
    """

    server: str
    message: Mapping[str, Any]

    @property
    def method(self) -> str | None:
        """The ``method`` of a request or notification; ``None`` for a reply."""
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def id(self) -> int | str | None:
        """The JSON-RPC ``id`` (a reply's or a server request's); ``None`` for a notification."""
        value = self.message.get("id")
        return value if isinstance(value, (int, str)) and not isinstance(value, bool) else None

    def __repr__(self) -> str:
        method = self.method
        shown = "reply" if method is None else ascii(method[:80])
        ident = self.id
        return f"InboundMessage(server={self.server!r}, method={shown}, id={ascii(ident)[:40]})"


MessageHook = Callable[[InboundMessage], None]


class StderrTail:
    """Keeps the redacted, whitespace-collapsed tail of a byte stream.

    Fed raw chunks by the stderr thread. Memory is bounded by
    ``MAX_STDERR_LINE_BYTES`` for the line being assembled plus ``max_bytes``
    for the kept tail.
    """

    def __init__(self, max_bytes: int, *, secrets: Iterable[str] = ()) -> None:
        self._max = max_bytes
        self._known = KnownSecrets(secrets)
        self._partial: list[bytes] = []
        self._partial_len = 0
        self._overlong = False  # the current line already passed the line cap
        self._in_key = False  # inside a PEM private key that began on an earlier line
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

    def _redact_line(self, raw: str) -> str:
        # A PEM key's body spans lines: from a BEGIN line to its END line,
        # every line is withheld whole.
        if self._in_key:
            end = raw.find(_PEM_END)
            if end < 0:
                return _MASK
            self._in_key = False
            raw = _MASK + raw[end:]
        begin = raw.rfind(_PEM_BEGIN)
        if begin >= 0 and _PEM_KEY in raw[begin : begin + 64] and raw.find(_PEM_END, begin) < 0:
            self._in_key = True
        return redact(raw, self._known)

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
            line = " ".join(self._redact_line(raw).split())
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
