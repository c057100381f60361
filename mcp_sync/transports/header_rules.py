"""Rules for what an HTTP server entry may send: static headers, and when plain
``http://`` may carry credentials.

Shared by :func:`mcp_sync.connect` (which raises :class:`ProtocolError`) and
the config models (which report a field of a file). Each check raises
``ValueError`` with a message that never repeats a header value: a header
is as private as a bearer token. A value may be a :class:`~._secret.Secret`
(what a config's ``${VAR}`` expanded to): its value is what is checked.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from ..protocol.secret import Secret

__all__ = ["MAX_HEADERS", "RESERVED_HEADERS", "check_headers", "plain_http_refused"]

MAX_HEADERS = 64
"""At most this many static headers per server."""
_MAX_HEADER_BYTES = 8192

# RFC 9110 token characters: a header name.
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
# Visible ASCII, spaces and tabs inside: a header value (no CR, LF or NUL).
_VALUE = re.compile(r"[\x21-\x7e]([\x20-\x7e\t]*[\x21-\x7e])?\Z")

RESERVED_HEADERS: frozenset[str] = frozenset(
    {
        "accept",
        "accept-encoding",
        "connection",
        "content-length",
        "content-type",
        "host",
        "last-event-id",
        "mcp-method",
        "mcp-name",
        "mcp-protocol-version",
        "mcp-session-id",
        "transfer-encoding",
    }
)
"""Headers the transport sets itself (lower case); a static header may not replace
them, nor any ``Mcp-Param-*`` (the 2026-07-28 headers of tool arguments)."""


def check_headers(headers: object, *, has_token: bool) -> dict[str, str]:
    """``headers`` as a plain dict of the values to send (a ``Secret``
    revealed: the HTTP transport's options keep them private), or
    ``ValueError`` naming the header at fault."""
    if not isinstance(headers, Mapping):
        raise ValueError("must be a mapping of header names to string values")
    if len(headers) > MAX_HEADERS:
        raise ValueError(f"has more than {MAX_HEADERS} headers")
    out: dict[str, str] = {}
    seen: set[str] = set()
    for name, given in headers.items():
        value = given.reveal() if isinstance(given, Secret) else given
        if not isinstance(name, str) or not _TOKEN.match(name):
            shown = ascii(name)[:80] if isinstance(name, str) else type(name).__name__
            raise ValueError(f"has a header name that is not an HTTP token: {shown}")
        lower = name.lower()
        if lower in seen:
            raise ValueError(f"names header {name} twice (header names ignore case)")
        seen.add(lower)
        if lower in RESERVED_HEADERS or lower.startswith("mcp-param-"):
            raise ValueError(f"may not set {name}: the transport sets it")
        if lower == "authorization" and has_token:
            raise ValueError(
                "sets Authorization and a bearer token variable is also given; keep one"
            )
        if not isinstance(value, str):
            raise ValueError(f"has a value for {name} that is not a string")
        if len(value) > _MAX_HEADER_BYTES or not _VALUE.match(value):
            raise ValueError(
                f"has a value for {name} that is empty, longer than {_MAX_HEADER_BYTES} "
                "characters, or holds a line break, control or non-ASCII character"
            )
        out[name] = value
    return out


def _loopback(host: str) -> bool:
    host = host.rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False  # a name: never resolved here, so never trusted as loopback
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def plain_http_refused(url: str, *, sends_credentials: bool, allowed: bool) -> bool:
    """Whether sending credentials to ``url`` must be refused: plain ``http:`` to
    a host that is not loopback (127.0.0.0/8, ::1, localhost), unless ``allowed``."""
    if not sends_credentials or allowed:
        return False
    parts = urlsplit(url)
    if parts.scheme.lower() != "http":
        return False
    return not _loopback(parts.hostname or "")
