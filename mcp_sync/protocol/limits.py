"""Default limits and the validation every option goes through before spawn."""

from __future__ import annotations

import threading
from dataclasses import dataclass, fields
from typing import Any

from .errors import InvalidOption, ProtocolError

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT_MS",
    "DEFAULT_MAX_CATALOG_PAGES",
    "DEFAULT_MAX_FRAME_BYTES",
    "DEFAULT_MAX_OUTBOUND_FRAME_BYTES",
    "DEFAULT_MAX_STDERR_BYTES",
    "DEFAULT_MAX_TOOLS",
    "DEFAULT_MAX_TOOL_DOCUMENT_BYTES",
    "DEFAULT_MAX_TOOL_NAME_BYTES",
    "DEFAULT_QUEUE_CAPACITY",
    "DEFAULT_REQUEST_TIMEOUT_MS",
    "DEFAULT_START_TIMEOUT_MS",
    "MAX_JSON_DEPTH",
    "MAX_JSON_VALUES",
    "MAX_SAFE_INTEGER",
    "LIMIT_NAMES",
    "STDIO_ONLY_LIMITS",
    "Limits",
    "check_limit",
    "reply_not_queued",
    "request_budget",
    "seconds",
]

DEFAULT_HANDSHAKE_TIMEOUT_MS = 60_000
DEFAULT_START_TIMEOUT_MS = 180_000
"""How long a stdio server may read nothing after it was started: a first
``npx -y`` of a large package installs it before the server reads (103-117 s
measured on a busy 2-core machine, 33-55 s on a quiet one)."""
DEFAULT_REQUEST_TIMEOUT_MS = 120_000
DEFAULT_QUEUE_CAPACITY = 64
DEFAULT_MAX_FRAME_BYTES = 67_108_864
DEFAULT_MAX_OUTBOUND_FRAME_BYTES = 1_048_576
DEFAULT_MAX_TOOLS = 4096
DEFAULT_MAX_TOOL_NAME_BYTES = 128
DEFAULT_MAX_TOOL_DOCUMENT_BYTES = 65_536
DEFAULT_MAX_CATALOG_PAGES = 32
DEFAULT_MAX_STDERR_BYTES = 2048

MAX_JSON_DEPTH = 128
"""Objects and arrays one message may nest, counting the JSON-RPC envelope."""

MAX_JSON_VALUES = 4_194_304
"""How many values one inbound message may hold, counted as the commas and
opening brackets outside strings (an empty array counts twice with its comma).
Parsing costs memory per value, far more than its bytes (``[[],[],...]`` at
a 64 MiB frame would become some 1.5 GiB of lists); a 4096-tool catalog
with rich schemas counts some 330,000."""

MAX_SAFE_INTEGER = 2**53 - 1
"""The largest value any limit may take (the largest integer a double holds exactly)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """The eleven bounds a session enforces on its server. Build with :meth:`create`."""

    handshake_timeout_ms: int = DEFAULT_HANDSHAKE_TIMEOUT_MS
    start_timeout_ms: int = DEFAULT_START_TIMEOUT_MS
    request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    queue_capacity: int = DEFAULT_QUEUE_CAPACITY
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    max_outbound_frame_bytes: int = DEFAULT_MAX_OUTBOUND_FRAME_BYTES
    max_tools: int = DEFAULT_MAX_TOOLS
    max_tool_name_bytes: int = DEFAULT_MAX_TOOL_NAME_BYTES
    max_tool_document_bytes: int = DEFAULT_MAX_TOOL_DOCUMENT_BYTES
    max_catalog_pages: int = DEFAULT_MAX_CATALOG_PAGES
    max_stderr_bytes: int = DEFAULT_MAX_STDERR_BYTES
    # A new limit is added here (with its DEFAULT_ constant) and nowhere else:
    # connect's keywords and the config file's camelCase names derive from it.

    def as_options(self) -> dict[str, int]:
        """The limits as keyword arguments of :func:`mcp_sync.connect`."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def create(cls, **options: Any) -> Limits:
        """Validate each given option; ``None`` means the default."""
        known = {f.name for f in fields(cls)}
        values: dict[str, int] = {}
        for name, value in options.items():
            if name not in known:
                raise InvalidOption(f"unknown option {name!r}")
            if value is None:
                continue
            values[name] = check_limit(name, value)
        return cls(**values)


LIMIT_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Limits))
"""The limits' option names, in order: ``connect``'s keywords and, in
camelCase, a config entry's fields."""

STDIO_ONLY_LIMITS: frozenset[str] = frozenset({"start_timeout_ms", "queue_capacity", "max_stderr_bytes"})
"""Limits that only a stdio server's config entry may set (an HTTP entry has
no child's stderr and no queue of its own to size)."""


def check_limit(name: str, value: object) -> int:
    """``value`` if it is a positive integer no larger than 2**53-1.

    A bool is refused even though it is an ``int`` subclass: ``True`` as a
    limit is always a mistake.
    """
    if type(value) is not int or not 1 <= value <= MAX_SAFE_INTEGER:
        shown = repr(value) if isinstance(value, (int, float, bool)) else type(value).__name__
        raise InvalidOption(
            f"option {name} must be a positive integer no larger than 2**53-1, got {shown}"
        )
    return value


def request_budget(limits: Limits, timeout_ms: object) -> tuple[int, str]:
    """A request's budget in ms and the option it came from, for messages:
    ``timeout_ms`` if given (checked), else ``request_timeout_ms``."""
    if timeout_ms is None:
        return limits.request_timeout_ms, "request_timeout_ms"
    return check_limit("timeout_ms", timeout_ms), "timeout_ms"


def seconds(ms: int) -> float:
    """Milliseconds as a wait that ``threading`` accepts (clamped to TIMEOUT_MAX)."""
    return ms / 1000.0 if ms < _TIMEOUT_MAX_MS else threading.TIMEOUT_MAX


_TIMEOUT_MAX_MS = threading.TIMEOUT_MAX * 1000.0


def reply_not_queued(limits: Limits) -> ProtocolError:
    """The session's end when a reply to a server request found no room in
    the outbound queue for ``request_timeout_ms``: the session cannot go on
    without answering the server, so it ends."""
    return ProtocolError(
        "a reply to a server request could not be queued within "
        f"request_timeout_ms={limits.request_timeout_ms} "
        f"(queue_capacity={limits.queue_capacity} is full)"
    )
