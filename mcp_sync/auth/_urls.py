"""URL rules for OAuth: which URLs may be used, and how a protected resource
metadata ``resource`` is matched against the server's URL."""

from __future__ import annotations

import ipaddress
import unicodedata
from urllib.parse import urlsplit, urlunsplit

from ..protocol.errors import AuthError

__all__ = [
    "check_oauth_url",
    "is_loopback",
    "origin",
    "resource_matches",
    "same_origin",
    "without_query",
]

MAX_URL_CHARS = 2048
# Unicode categories a URL may not hold: controls (C0, DEL, C1), format
# characters (bidi overrides and isolates, zero-width marks), surrogates and
# the line and paragraph separators.
_UNSHOWABLE = dict.fromkeys(("Cc", "Cf", "Cs", "Zl", "Zp"), True)


def is_loopback(host: str | None) -> bool:
    """``localhost`` or a loopback IP literal (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_oauth_url(value: object, what: str, server: str) -> str:
    """An absolute ``https`` URL (``http`` only to a loopback host), without a
    fragment or user info; else :class:`AuthError` naming ``what`` (never the
    value, which came from a server)."""
    if not isinstance(value, str) or not value or len(value) > MAX_URL_CHARS:
        raise AuthError(f"server {server!r}: {what} is not a usable URL")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise AuthError(f"server {server!r}: {what} is not a usable URL")
    if not value.isascii() and any(_UNSHOWABLE.get(unicodedata.category(ch), False) for ch in value):
        # Such a URL may be printed for the user to open: a C1 control (CSI)
        # could drive the terminal, a bidi override could show another host.
        raise AuthError(
            f"server {server!r}: {what} contains a control, bidirectional-formatting "
            "or other invisible character"
        )
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        raise AuthError(f"server {server!r}: {what} is not a usable URL") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc or parts.fragment:
        raise AuthError(f"server {server!r}: {what} is not an absolute http(s) URL without a fragment")
    if scheme == "http" and not is_loopback(parts.hostname):
        raise AuthError(
            f"server {server!r}: {what} uses plain http to a host that is not loopback "
            "(OAuth needs https)"
        )
    return value


def _key(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port
    if port is None:
        port = 443 if scheme == "https" else 80 if scheme == "http" else None
    return scheme, (parts.hostname or "").lower(), port


def same_origin(a: str, b: str) -> bool:
    try:
        return _key(a) == _key(b)
    except ValueError:
        return False


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, as written (no normalization)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def without_query(url: str) -> str:
    """``url`` without its query and fragment (a DPoP ``htu``)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def resource_matches(resource: str, server_url: str) -> bool:
    """Whether a metadata ``resource`` identifies the server at ``server_url``:
    the same origin (scheme and host compared case-insensitively, default
    ports implied), and a path that is the server's path or a whole-segment
    prefix of it (RFC 9728 §3.3, as MCP uses it: metadata at the root may
    name the origin)."""
    try:
        if not same_origin(resource, server_url):
            return False
        r, s = urlsplit(resource), urlsplit(server_url)
    except ValueError:
        return False
    if r.query or r.fragment:
        return False
    rpath = r.path.rstrip("/")
    spath = s.path.rstrip("/")
    return not rpath or spath == rpath or spath.startswith(rpath + "/")
