"""Protocol revisions this client speaks, grouped by era.

Two eras (2026-07-28, "Versioning and Compatibility"):

- **legacy**: a session opened by the ``initialize`` handshake (2025-11-25
  and every revision before it);
- **modern**: no handshake; every request carries its protocol version, the
  client's capabilities and identity in ``_meta`` (2026-07-28 and later).

Constants only, so that every module can import them without a cycle.
"""

from __future__ import annotations

import re

__all__ = [
    "DEFAULT_HANDSHAKE_VERSION",
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "LATEST_MODERN_VERSION",
    "LEGACY",
    "MODERN",
    "MODERN_PROTOCOL_VERSIONS",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "UNSUPPORTED_PROTOCOL_VERSION",
    "advertised_versions",
    "describe_versions",
]

MODERN_PROTOCOL_VERSIONS: tuple[str, ...] = ("2026-07-28",)
"""Revisions without a handshake, newest first."""
HANDSHAKE_PROTOCOL_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Revisions opened by the ``initialize`` handshake, newest first."""
SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = MODERN_PROTOCOL_VERSIONS + HANDSHAKE_PROTOCOL_VERSIONS
"""Every revision this client speaks, newest first."""
LATEST_MODERN_VERSION = MODERN_PROTOCOL_VERSIONS[0]
DEFAULT_HANDSHAKE_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[0]
"""What the handshake proposes unless ``protocol_version=`` pins another."""

LEGACY = "legacy"
MODERN = "modern"

UNSUPPORTED_PROTOCOL_VERSION = -32022
"""The JSON-RPC error a server gives a request whose version it does not speak
(2026-07-28 ``UnsupportedProtocolVersionError``); ``data.supported`` lists its own."""

# A server's list of versions is untrusted input: bounded, and only values that
# look like a revision are ever named in a message.
MAX_ADVERTISED_VERSIONS = 64
_REVISION = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_SHOWN = 8


def advertised_versions(value: object) -> tuple[str, ...] | None:
    """The versions a server lists (``supportedVersions``, ``data.supported``),
    or ``None`` when the value is not a short list of strings."""
    if not isinstance(value, list) or len(value) > MAX_ADVERTISED_VERSIONS:
        return None
    if not all(isinstance(item, str) and len(item) <= 64 for item in value):
        return None
    return tuple(value)


def newest_mutual(theirs: tuple[str, ...], ours: tuple[str, ...]) -> str | None:
    """The newest of ``ours`` (newest first) that ``theirs`` also lists."""
    return next((version for version in ours if version in theirs), None)


def describe_versions(versions: tuple[str, ...]) -> str:
    """A server's versions for a message: revision-shaped values only, a few at most."""
    shown = [v for v in versions if _REVISION.match(v)][:_SHOWN]
    hidden = len(versions) - len(shown)
    text = ", ".join(shown) if shown else "none this client recognises"
    if hidden and shown:
        text += f" (and {hidden} other value{'s' if hidden > 1 else ''})"
    return text
