"""OpenTelemetry tracing for every MCP request, opt-in.

:func:`instrument` makes each request a session sends a CLIENT span named
and described as OpenTelemetry's semantic conventions for MCP say
(``mcp.method.name``, ``gen_ai.tool.name``, ``gen_ai.prompt.name``,
``mcp.resource.uri``, ``mcp.protocol.version``, ``network.transport``,
``server.address``/``server.port``, ``error.type``,
``rpc.response.status_code``; ``mcp.resource.uri`` with its user, password,
and query and fragment values replaced by ``REDACTED``), plus ``mcp_sync.server`` (the name given to
``connect``) and ``mcp_sync.era``. The current trace context goes to the
server in the request's ``params._meta`` (``traceparent``, ``tracestate``,
through the global propagator; keys the caller set there are kept), and
server log records (``mcp_sync.server.<name>``) carry ``otelTraceID`` and
``otelSpanID`` of the request in flight on that server when the message
arrived (the one started last).

Needs ``opentelemetry-api``: ``pip install 'mcp-sync-client[otel]'``.
Nothing of it is imported until :func:`instrument` is called.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from ._log import TRACING
from .protocol.errors import McpError, RemoteError, Timeout, missing_extra
from .protocol.redaction import redact_url
from .session.eras.modern import META_PROTOCOL_VERSION, NoCommonVersion

__all__ = ["instrument", "is_instrumented", "uninstrument"]

# Guards _in_flight (server name -> the spans of its requests now running,
# oldest first): request threads add and remove, the reader thread reads.
_lock = threading.Lock()
_in_flight: dict[str, list[Any]] = {}

_TARGET = {"tools/call": "gen_ai.tool.name", "prompts/get": "gen_ai.prompt.name"}


def is_instrumented() -> bool:
    """Whether :func:`instrument` is in force."""
    return TRACING.hook is not None


def instrument(tracer_provider: Any = None) -> None:
    """Trace every request of every session from now on (process-wide).

    ``tracer_provider``: the ``TracerProvider`` to use (default: the global
    one). Calling it again replaces the provider; :func:`uninstrument` stops.
    """
    try:
        from opentelemetry import trace
    except ImportError:
        raise missing_extra("mcp_sync.otel", "opentelemetry", "otel") from None
    from ._version import __version__

    tracer = trace.get_tracer("mcp_sync", __version__, tracer_provider=tracer_provider)
    TRACING.log_context = _log_context
    TRACING.hook = _make_hook(tracer)


def uninstrument() -> None:
    """Stop tracing (requests already running finish their spans)."""
    TRACING.hook = None
    TRACING.log_context = None


def _log_context(server: str) -> dict[str, str] | None:
    with _lock:
        spans = _in_flight.get(server)
        span = spans[-1] if spans else None
    if span is None:
        return None
    context = span.get_span_context()
    return {"otelTraceID": format(context.trace_id, "032x"), "otelSpanID": format(context.span_id, "016x")}


def _attributes(core: Any, method: str, params: Mapping[str, Any], probe: bool) -> tuple[str, dict[str, Any]]:
    attributes: dict[str, Any] = {"mcp.method.name": method, "mcp_sync.server": core.server}
    era = getattr(core, "era", None)
    if probe:
        # Sent in the modern era's framing before the session's era is settled.
        attributes["mcp_sync.era"] = "modern"
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, Mapping) else None
        if isinstance(version, str):
            attributes["mcp.protocol.version"] = version
    elif era is not None:
        attributes["mcp_sync.era"] = era.name
        if era.version is not None:
            attributes["mcp.protocol.version"] = era.version
    name = method
    target_key = _TARGET.get(method)
    target = params.get("name")
    if target_key is not None and isinstance(target, str):
        attributes[target_key] = target
        name = f"{method} {target}"
        if method == "tools/call":
            attributes["gen_ai.operation.name"] = "execute_tool"
    uri = params.get("uri")
    if isinstance(uri, str):
        # A span outlives the request in a tracing backend many can read: the
        # URI goes there without its userinfo and query values (a presigned
        # URL's signature, a token), as the conventions ask of url.full.
        attributes["mcp.resource.uri"] = redact_url(uri)
    url = getattr(core.transport, "url", None)
    if isinstance(url, str):
        parts = urlsplit(url)
        attributes["network.transport"] = "tcp"
        if parts.hostname:
            attributes["server.address"] = parts.hostname
        if parts.port:
            attributes["server.port"] = parts.port
    else:
        attributes["network.transport"] = "pipe"
    return name, attributes


def _with_context(params: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """A copy of ``params`` whose ``_meta`` carries the trace context
    (what the caller put there stays as it is)."""
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier, context=context)
    meta = params.get("_meta")
    merged: dict[str, Any] = dict(meta) if isinstance(meta, Mapping) else {}
    for key, value in carrier.items():
        merged.setdefault(key, value)
    out = dict(params)
    out["_meta"] = merged
    return out


PROBE_OUTCOME = "mcp_sync.probe.outcome"
"""The attribute of the era probe's span (``server/discover`` sent by
``protocol="auto"``): ``answered`` (a modern server), ``refused`` (a JSON-RPC
error: a server of the handshake era, which is then sent ``initialize``),
``superseded`` (the handshake was answered first and the probe no longer
waited for) or ``failed`` (the span's status says why)."""


def _probe_outcome(error: BaseException, watch: Any) -> str | None:
    """The outcome of a probe that raised, when it is an expected one."""
    if isinstance(error, (RemoteError, NoCommonVersion)):
        return "refused"
    # The race stops waiting for the probe once the handshake decides.
    if isinstance(error, Timeout) and getattr(watch, "stopped", False):
        return "superseded"
    return None


def _make_hook(tracer: Any) -> Callable[..., Any]:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode

    def traced(  # noqa: PLR0913, PLR0917
        core: Any, method: str, params: dict[str, Any], timeout: float, describe: Any,
        cancellable: bool, watch: Any, headers: Any,
    ) -> Any:  # fmt: skip
        probe = TRACING.probing()
        name, attributes = _attributes(core, method, params, probe)
        with tracer.start_as_current_span(
            name, kind=SpanKind.CLIENT, attributes=attributes, record_exception=False, set_status_on_exception=False
        ) as span:
            sent = _with_context(params, trace.set_span_in_context(span))
            server = core.server
            with _lock:
                _in_flight.setdefault(server, []).append(span)
            TRACING.set_inside(True)
            try:
                result = core.request(
                    method, sent, timeout, describe, cancellable=cancellable, watch=watch, headers=headers
                )
            except BaseException as exc:
                if isinstance(exc, RemoteError):
                    span.set_attribute("rpc.response.status_code", str(exc.code))
                outcome = _probe_outcome(exc, watch) if probe else None
                if outcome is not None:
                    # The era probe's expected answers: the handshake follows.
                    span.set_attribute(PROBE_OUTCOME, outcome)
                    raise
                kind = exc.kind if isinstance(exc, McpError) else type(exc).__qualname__
                if probe:
                    span.set_attribute(PROBE_OUTCOME, "failed")
                span.set_attribute("error.type", kind)
                span.set_status(Status(StatusCode.ERROR, kind))
                raise
            finally:
                TRACING.set_inside(False)
                with _lock:
                    spans = _in_flight.get(server)
                    if spans is not None:
                        spans.remove(span)
                        if not spans:
                            del _in_flight[server]
            if probe:
                span.set_attribute(PROBE_OUTCOME, "answered")
            if method == "tools/call" and isinstance(result, Mapping) and result.get("isError") is True:
                span.set_attribute("error.type", "tool_error")
                span.set_status(Status(StatusCode.ERROR, "tool_error"))
            return result

    return traced
