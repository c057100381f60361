"""Credential redaction and URL redaction for records.

A server's stderr is untrusted text that often carries secrets (tokens in
URLs, ``Authorization`` headers echoed by a debug log). Each complete line is
redacted first and only then measured and capped, so a cap can never cut a
credential in half and leave a recognisable prefix behind.
"""

from __future__ import annotations

import functools
import re
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
        r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9_\-]*+)\s++)?(?P<s>[^\s\"',;]++)",
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
    scheme = match.re.groupindex.get("scheme")
    end = _secret_end(s, start, end, credentials=scheme is not None and match.start(scheme) >= 0)
    return s[whole_start:start] + _MASK + s[end:whole_end]


_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}


@functools.cache
def _token68() -> re.Pattern[str]:
    """HTTP's token68 (RFC 9110, 11.2), the shape of Basic and Bearer credentials."""
    return re.compile(r"[A-Za-z0-9\-._~+/]++=*+")
# How far before a secret an opening bracket is looked for, and how many
# closing ones after it may be given back: a bound, so that a line of
# thousands of secrets costs a fixed amount each.
_LOOK_BACK = 256
_MOST_GIVEN_BACK = 8


def _secret_end(text: str, start: int, end: int, *, credentials: bool = False) -> int:
    """Where the secret in ``text[start:end]`` ends: closing brackets at its
    end that close one opened shortly before it (``(Authorization: Bearer
    x)``) belong to the text around it and are not masked, and so do those
    after an ``Authorization`` scheme's credentials written as a token68
    (``Bearer abc...)``: such a token has no brackets) or after a value an
    earlier rule masked (``Bearer eyJ...)``, a JWT). Other brackets stay in
    the secret: they may be its own characters."""
    masked = start + len(_MASK)
    if (
        text.startswith(_MASK, start)
        and end - masked <= _MOST_GIVEN_BACK
        and all(text[at] in _CLOSERS for at in range(masked, end))
    ):
        return masked  # masked already by a rule before (a JWT): the rest is text
    inner = end
    while end - inner < _MOST_GIVEN_BACK and inner > start and text[inner - 1] in _CLOSERS:
        inner -= 1
    if inner == end:
        return end
    if credentials and _token68().fullmatch(text, start, inner):
        return inner
    before = text[max(0, start - _LOOK_BACK) : start]
    unclosed = {
        closer: max(0, before.count(opener) - before.count(closer)) for closer, opener in _CLOSERS.items()
    }
    # The first closers close what the secret itself opened; the ones
    # nearest the end close the openers before it. Any the openers cannot
    # account for stay masked.
    body = text[start:inner]
    opened = {closer: max(0, body.count(opener) - body.count(closer)) for closer, opener in _CLOSERS.items()}
    own = inner
    while own < end and opened[text[own]] > 0:
        opened[text[own]] -= 1
        own += 1
    given = end
    while given > own and unclosed[text[given - 1]] > 0:
        unclosed[text[given - 1]] -= 1
        given -= 1
    return given


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
