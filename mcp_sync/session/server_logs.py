"""Server logs: ``notifications/message`` to the standard :mod:`logging` module.

Each message becomes a record on the logger ``mcp_sync.server.<server>``
(``<server>`` is the name given to ``connect``; the server's own ``logger``
field never names a Python logger, so a server cannot create loggers). MCP's
eight syslog levels map onto logging's five; the record keeps the original in
``record.mcp_level`` and the server's logger name in ``record.mcp_logger``.

The text is untrusted: it is bounded (a message over
``MAX_STDERR_LINE_BYTES`` is withheld whole), redacted like stderr, stripped
of control and bidi characters (so it cannot forge a line of a log file) and
then capped at ``MAX_LOG_MESSAGE_CHARS``. Records are emitted on a library
thread, never the one reading the server's output, through a bounded backlog:
in a flood the excess is dropped and counted, and one warning says how many.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._log import TRACING
from ..protocol.errors import ProtocolError
from ..protocol.redaction import MAX_STDERR_LINE_BYTES, redact
from ..protocol.text import escape
from ..transports.workers import Workers

if TYPE_CHECKING:
    from .feature_contract import Core

__all__ = ["LEVELS", "MAX_LOG_MESSAGE_CHARS", "ServerLog", "set_log_level"]

LEVELS: Mapping[str, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}
"""MCP log level -> :mod:`logging` level. An unknown level is logged as WARNING."""

MAX_LOG_MESSAGE_CHARS = 4096
"""A server log message is cut to this many characters (after redaction)."""
MAX_LOGGER_NAME_CHARS = 64

# Without this, logging's "last resort" would print a server's warnings to the
# user's stderr in an application that configured no logging at all.
logging.getLogger("mcp_sync.server").addHandler(logging.NullHandler())


class ServerLog:
    """Forwards one session's log notifications to its logger."""

    def __init__(self, server: str, workers: Workers) -> None:
        self.logger = logging.getLogger(f"mcp_sync.server.{server}")
        self._server = server
        self._workers = workers
        self._lock = threading.Lock()  # guards _dropped
        self._dropped = 0

    def notify(self, params: object) -> None:
        """A ``notifications/message`` from the reader thread: a cheap level
        check, then the work is handed to the library's thread."""
        if not isinstance(params, Mapping):
            return
        mcp_level = params.get("level")
        level = LEVELS.get(mcp_level, logging.WARNING) if isinstance(mcp_level, str) else logging.WARNING
        if not self.logger.isEnabledFor(level):
            return
        data = params.get("data")
        name = params.get("logger")
        # Taken as the message arrives: the request in flight on this server then.
        trace = TRACING.log_context(self._server) if TRACING.log_context is not None else None
        if not self._workers.submit(lambda: self._emit(level, mcp_level, name, data, trace)):
            with self._lock:
                self._dropped += 1

    def _emit(
        self, level: int, mcp_level: object, name: object, data: object, trace: dict[str, str] | None = None
    ) -> None:
        with self._lock:
            dropped, self._dropped = self._dropped, 0
        if dropped:
            self.logger.warning(
                "%d log messages from server %r were dropped (they came faster than they "
                "could be logged)",
                dropped,
                self._server,
                extra={"mcp_event": "server_log_dropped", "mcp_server": self._server, "mcp_dropped": dropped},
            )
        shown_level = mcp_level if isinstance(mcp_level, str) and mcp_level in LEVELS else "unknown"
        source = clean(name, MAX_LOGGER_NAME_CHARS) if isinstance(name, str) else None
        text = message_text(data)
        self.logger.log(
            level,
            "%s",
            f"[{source}] {text}" if source else text,
            extra={
                "mcp_event": "server_log",
                "mcp_server": self._server,
                "mcp_level": shown_level,
                "mcp_logger": source,
                **(trace or {}),
            },
        )


def message_text(data: object) -> str:
    """The ``data`` of a log notification as one safe, bounded line."""
    if isinstance(data, str):
        raw = data
    else:
        try:
            raw = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):
            raw = repr(data)
    return clean(raw, MAX_LOG_MESSAGE_CHARS)


def clean(raw: str, limit: int) -> str:
    # Measured first (redaction is linear, but not on unbounded text), then
    # redacted, then escaped, then capped: a cap can never cut a credential
    # in half and leave its recognisable prefix.
    if len(raw) > MAX_STDERR_LINE_BYTES or len(raw.encode("utf-8", "surrogatepass")) > MAX_STDERR_LINE_BYTES:
        return f"[a log message over {MAX_STDERR_LINE_BYTES} bytes was withheld]"
    text = escape(redact(raw))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def log_level_name(level: Any) -> str:
    """Check a level given to ``set_log_level``."""
    if not isinstance(level, str) or level not in LEVELS:
        raise ProtocolError("log level must be one of " + ", ".join(LEVELS))
    return level


def set_log_level(core: Core, level: str, timeout_ms: int | None) -> None:
    """``Session.set_log_level``: ``logging/setLevel``, or in the modern era
    the level every later request carries."""
    name = log_level_name(level)
    core.require("logging", "logging/setLevel")
    # 2026-07-28 has no logging/setLevel: there the level rides on every request.
    core.era.set_log_level(core, name, timeout_ms)
