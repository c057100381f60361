"""Logging: the ``mcp_sync`` logger hierarchy and the events it records.

Four loggers under ``logging.getLogger("mcp_sync")`` (which has only a
``NullHandler``: the application decides where records go):

- ``mcp_sync.session``: a session was connected (with the handshake time),
  its era, a request was cancelled, the session ended with an error, its
  server was torn down;
- ``mcp_sync.calls``: one DEBUG record when a tool call starts and one when
  it finishes (with its latency and outcome);
- ``mcp_sync.servers``: :class:`mcp_sync.Servers` replacing a server, holding
  one back after repeated failures, and its health checks;
- ``mcp_sync.transport``: the HTTP transport resuming an event stream
  (``Last-Event-ID``) and starting a new session after a 404; the pipe I/O
  of stdio turning its ctypes fast path off for the process
  (``fast_path_off``, once).

Every record carries its fields as attributes (``logging``'s ``extra=``),
each named ``mcp_*``: ``mcp_event`` and ``mcp_server`` always, the others
per event (see docs/guides/observe-with-logging.md). Only text the library
made goes in: server names from the caller's config, tool names escaped
with ``ascii()``, error kinds and the library's own model-safe messages
(redacted once more), numbers. Never arguments, results, stderr, frames,
environment values, command lines or process ids of servers.

The call sites in the session are single lines. A tool call checks whether
``mcp_sync.calls`` is enabled for DEBUG once, and only then goes through
:func:`logged_call`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

from .protocol.errors import McpError, ProtocolError
from .protocol.redaction import redact

if TYPE_CHECKING:
    from .protocol.catalog import CallToolResult, Tool

__all__ = [
    "CALLS",
    "TRACING",
    "DEBUG",
    "ROOT",
    "SERVERS",
    "SESSION",
    "TRANSPORT",
    "cancelled",
    "check_traceparent",
    "connect_failed",
    "connected",
    "ended",
    "hook_failed",
    "logged_call",
    "servers_event",
    "torn_down",
    "transport_event",
]

DEBUG = logging.DEBUG

ROOT = logging.getLogger("mcp_sync")
ROOT.addHandler(logging.NullHandler())
SESSION = logging.getLogger("mcp_sync.session")
CALLS = logging.getLogger("mcp_sync.calls")
SERVERS = logging.getLogger("mcp_sync.servers")
TRANSPORT = logging.getLogger("mcp_sync.transport")


def _emit(
    logger: logging.Logger,
    level: int,
    event: str,
    server: str,
    message: str,
    *args: object,
    **fields: Any,
) -> None:
    if not logger.isEnabledFor(level):
        return
    extra = {"mcp_event": event, "mcp_server": server}
    for key, value in fields.items():
        extra["mcp_" + key] = value
    # A filter or handler of the application's must not break a session: the
    # session's own threads log, and some of these events are its ending.
    with contextlib.suppress(Exception):
        logger.log(level, message, *args, extra=extra)


def _ms(since: float) -> float:
    return round((time.monotonic() - since) * 1000.0, 3)


def _error_fields(error: BaseException) -> dict[str, Any]:
    if isinstance(error, McpError):
        return {"error_kind": error.kind, "error": redact(error.message)}
    # Not the library's text (KeyboardInterrupt, a bug): only its type.
    return {"error_kind": type(error).__name__, "error": type(error).__name__}


# ------------------------------------------------------------------ session

# What these records read of a session and of its core: structural types, so
# that this module, which the session imports, imports nothing of the session.


class _Connected(Protocol):
    @property
    def server(self) -> str: ...
    @property
    def era(self) -> str: ...
    @property
    def protocol_version(self) -> str: ...
    @property
    def tools(self) -> tuple[Tool, ...]: ...


class _Ending(Protocol):
    @property
    def server(self) -> str: ...
    @property
    def transport(self) -> object: ...
    def failed(self) -> bool: ...


def connected(session: _Connected, transport: str, started: float) -> None:
    """``connect()`` finished: the handshake time, the version, the catalog size."""
    elapsed = _ms(started)
    server, version, tools = session.server, session.protocol_version, len(session.tools)
    era = session.era
    _emit(
        SESSION, logging.INFO, "connect", server,
        "connected to server %r over %s in %.1f ms: protocol %s, %d tools",
        server, transport, elapsed, version, tools,
        transport=transport, handshake_ms=elapsed, protocol_version=version, era=era, tools=tools,
    )  # fmt: skip
    _emit(
        SESSION, logging.DEBUG, "era", server,
        "server %r speaks the %s era (protocol %s)", server, era, version,
        era=era, protocol_version=version,
    )  # fmt: skip


def connect_failed(server: object, error: BaseException, started: float) -> None:
    """``connect()`` failed (nothing is left running)."""
    fields = _error_fields(error)
    server = server if isinstance(server, str) else ""  # an invalid option is not shown
    _emit(
        SESSION, logging.WARNING, "connect_failed", server,
        "could not connect to server %r: %s (%s)", server, fields["error"], fields["error_kind"],
        elapsed_ms=_ms(started), **fields,
    )  # fmt: skip


def ended(core: _Ending, error: McpError) -> float:
    """The terminal transition happened; returns when (for :func:`torn_down`).

    A session its owner closed is not news; any other ending is a warning.
    """
    if core.failed():
        fields = _error_fields(error)
        _emit(
            SESSION, logging.WARNING, "end", core.server,
            "session with server %r ended: %s (%s)", core.server, fields["error"], fields["error_kind"],
            **fields,
        )  # fmt: skip
    return time.monotonic()


def torn_down(core: _Ending, ended_at: float) -> None:
    """The transport's teardown is complete: threads joined, process gone."""
    code = getattr(core.transport, "returncode", None)
    elapsed = _ms(ended_at) if ended_at else 0.0
    _emit(
        SESSION, logging.INFO, "teardown", core.server,
        "server %r torn down in %.1f ms (exit code %s)", core.server, elapsed, code,
        teardown_ms=elapsed, exit_code=code, failed=core.failed(),
    )  # fmt: skip


def cancelled(server: str, request_id: int, queued: bool) -> None:
    """A written request was abandoned: ``notifications/cancelled`` was queued
    (or dropped, the queue being full)."""
    _emit(
        SESSION, logging.INFO, "cancel", server,
        "cancelled request %d on server %r (%s)", request_id, server,
        "notification queued" if queued else "queue full: notification dropped",
        request_id=request_id, queued=queued,
    )  # fmt: skip


def hook_failed(server: str, error: BaseException, count: int) -> None:
    """The ``on_message`` hook raised (``count`` times so far in this
    session): a warning the first time, then DEBUG records. Only the
    exception's type: its text may quote what the server sent."""
    _emit(
        SESSION, logging.WARNING if count == 1 else logging.DEBUG, "message_hook_failed", server,
        "the on_message hook of server %r raised %s (%d so far; the message went on to the session)",
        server, type(error).__name__, count,
        error_kind=type(error).__name__, failures=count,
    )  # fmt: skip


# ------------------------------------------------------------------ calls


def logged_call(
    server: str,
    call: Callable[[], CallToolResult],
    name: str,
    timeout_ms: int | None,
    traceparent: str | None,
) -> CallToolResult:
    """``call()`` (the core's ``call_tool`` of tool ``name``) with a DEBUG
    record before and after."""
    tool = ascii(name)
    trace = {"traceparent": traceparent} if traceparent is not None else {}
    _emit(
        CALLS, logging.DEBUG, "call_start", server,
        "call %s on server %r", tool, server, tool=tool, timeout_ms=timeout_ms, **trace,
    )  # fmt: skip
    started = time.perf_counter()
    outcome = "ok"
    try:
        result = call()
        if result.is_error:
            outcome = "tool_error"
        return result
    except BaseException as exc:
        outcome = exc.kind if isinstance(exc, McpError) else type(exc).__name__
        raise
    finally:
        latency = round((time.perf_counter() - started) * 1000.0, 3)
        _emit(
            CALLS, logging.DEBUG, "call_end", server,
            "call %s on server %r: %s in %.3f ms", tool, server, outcome, latency,
            tool=tool, outcome=outcome, latency_ms=latency, **trace,
        )  # fmt: skip


# ------------------------------------------------------------------ Servers


def servers_event(
    level: int, event: str, server: str, message: str, *args: object, **fields: Any
) -> None:
    """A record of :class:`mcp_sync.Servers` (``mcp_sync.servers``)."""
    error = fields.pop("cause", None)
    if error is not None:
        fields.update(_error_fields(error))
    _emit(SERVERS, level, event, server, message, *args, **fields)


# ------------------------------------------------------------------ trace context

# W3C Trace Context, version 00: version-traceid-parentid-flags, lowercase hex.
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}\Z")


def check_traceparent(value: object) -> str:
    """``value`` if it is a valid W3C ``traceparent`` header value."""
    if (
        not isinstance(value, str)
        or not _TRACEPARENT.match(value)
        or value.startswith("ff")
        or value[3:35] == "0" * 32
        or value[36:52] == "0" * 16
    ):
        raise ProtocolError(
            "option traceparent must be a W3C traceparent value "
            "(version-traceid-parentid-flags in lowercase hex, ids not all zero)"
        )
    return value


# ------------------------------------------------------------------ transport


def transport_event(level: int, event: str, server: str, message: str, *args: object, **fields: Any) -> None:
    """An HTTP transport's recovery: ``resume`` (a reply stream GET again with
    ``Last-Event-ID``), ``listen_resume`` (the standalone stream, likewise),
    ``renew`` (a new session after a 404) and ``renew_failed``; and
    ``fast_path_off`` (stdio's pipe I/O leaving ctypes for the ``os``
    functions). Never the event id or the session id (both the server's
    choice)."""
    _emit(TRANSPORT, level, event, server, message, *args, **fields)


# ------------------------------------------------------------------ tracing


class _Tracing:
    """The seam :mod:`mcp_sync.otel` plugs into, without importing
    OpenTelemetry: both fields stay None until ``otel.instrument()``.

    ``hook(core, method, params, timeout, describe, cancellable, watch,
    headers)`` runs every request the sessions send (a span around it);
    ``log_context(server)`` gives the trace ids a server log record carries.
    """

    __slots__ = ("_local", "hook", "log_context")

    def __init__(self) -> None:
        self.hook: Callable[..., Any] | None = None
        self.log_context: Callable[[str], dict[str, str] | None] | None = None
        # Set on a thread while the hook runs the request it wraps, so the
        # request path does not wrap it twice.
        self._local = threading.local()

    def inside(self) -> bool:
        return getattr(self._local, "inside", False)

    def set_inside(self, value: bool) -> None:
        self._local.inside = value

    def probing(self) -> bool:
        """Whether this thread is sending ``protocol="auto"``'s era probe,
        whose refusal is an answer (a server of the handshake era), not a failure."""
        return getattr(self._local, "probe", False)

    @contextlib.contextmanager
    def probe(self) -> Iterator[None]:
        """The requests this thread sends inside are the era probe."""
        self._local.probe = True
        try:
            yield
        finally:
            self._local.probe = False


TRACING = _Tracing()
