"""OpenTelemetry, opt-in: spans per request with the real SDK's in-memory exporter.

``mcp_sync.otel.instrument`` makes every request a CLIENT span with the MCP
semantic-convention attributes, puts the caller's trace context in the
request's ``_meta`` (the server sees the trace id), correlates server log
records with the request in flight, and costs nothing before it is called
(``import mcp_sync`` does not load opentelemetry).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from support import connect_fake, logged
from test_http_modern import fake_http

import mcp_sync
from mcp_sync import otel


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        otel.uninstrument()
        provider.shutdown()


def _named(exporter: InMemorySpanExporter, name: str) -> Any:
    (span,) = [s for s in exporter.get_finished_spans() if s.name == name]
    return span


def test_a_tool_call_is_a_client_span_in_the_callers_trace(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    log = tmp_path / "log"
    tracer = trace.get_tracer("test", tracer_provider=otel_provider(spans))
    with connect_fake("--log", str(log), server="example") as session:
        with tracer.start_as_current_span("handler") as outer:
            assert session.call_tool("echo", {"message": "hi"}).content[0]["text"] == "hi"
        era, version = session.era, session.protocol_version
    span = _named(spans, "tools/call echo")
    assert span.kind is SpanKind.CLIENT
    assert span.parent is not None and span.parent.span_id == outer.get_span_context().span_id
    assert span.context.trace_id == outer.get_span_context().trace_id
    assert dict(span.attributes) == {
        "mcp.method.name": "tools/call",
        "gen_ai.tool.name": "echo",
        "gen_ai.operation.name": "execute_tool",
        "mcp_sync.server": "example",
        "mcp_sync.era": era,
        "mcp.protocol.version": version,
        "network.transport": "pipe",
    }
    assert span.status.status_code is StatusCode.UNSET
    # The server got the span's context in _meta.
    (call,) = [f for f in logged(log) if f.get("method") == "tools/call"]
    traceparent = call["params"]["_meta"]["traceparent"]
    assert traceparent.startswith(f"00-{span.context.trace_id:032x}-{span.context.span_id:016x}-")
    # Every request of the session is traced, the catalog's included.
    assert any(s.name == "tools/list" for s in spans.get_finished_spans())


def otel_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def test_outcomes_tool_error_timeout_and_remote_error(spans: InMemorySpanExporter) -> None:
    with connect_fake(server="example") as session:
        assert session.call_tool("fail").is_error
        with pytest.raises(mcp_sync.Timeout):
            session.call_tool("sleep", {"ms": 5_000}, timeout_ms=200)
        with pytest.raises(mcp_sync.McpError) as raised:
            session.read_resource("nowhere://x")
    failed = _named(spans, "tools/call fail")
    assert failed.attributes["error.type"] == "tool_error"
    assert failed.status.status_code is StatusCode.ERROR
    late = _named(spans, "tools/call sleep")
    assert late.attributes["error.type"] == "timeout"
    (read,) = [s for s in spans.get_finished_spans() if s.name == "resources/read"]
    assert read.attributes["mcp.resource.uri"] == "nowhere://x"
    assert read.attributes["error.type"] == raised.value.kind


def test_the_callers_own_traceparent_is_kept(spans: InMemorySpanExporter, tmp_path: Path) -> None:
    log = tmp_path / "log"
    mine = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    with connect_fake("--log", str(log), server="example") as session:
        session.call_tool("echo", {"message": "x"}, traceparent=mine)
    (call,) = [f for f in logged(log) if f.get("method") == "tools/call"]
    assert call["params"]["_meta"]["traceparent"] == mine


def test_server_logs_carry_the_trace_of_the_request_in_flight(
    spans: InMemorySpanExporter, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mcp_sync.server")
    with connect_fake("--era", "legacy", "--features", server="logs") as session:
        session.call_tool("log", {"level": "warning", "data": "from the server"})
        session.close()
    (record,) = [r for r in caplog.records if r.getMessage() == "from the server"]
    span = _named(spans, "tools/call log")
    assert record.otelTraceID == f"{span.context.trace_id:032x}"  # type: ignore[attr-defined]
    assert record.otelSpanID == f"{span.context.span_id:016x}"  # type: ignore[attr-defined]


def test_http_spans_name_the_server_address() -> None:
    exporter = InMemorySpanExporter()
    otel.instrument(tracer_provider=otel_provider(exporter))
    try:
        with fake_http("--era", "modern") as url, mcp_sync.connect_http(server="web", url=url) as session:
            session.call_tool("echo", {"message": "hi"})
    finally:
        otel.uninstrument()
    span = _named(exporter, "tools/call echo")
    assert span.attributes["network.transport"] == "tcp"
    assert span.attributes["server.address"] == "127.0.0.1"
    assert isinstance(span.attributes["server.port"], int)
    assert span.attributes["mcp_sync.era"] == "modern"


def test_nothing_is_traced_before_instrument_or_after_uninstrument(spans: InMemorySpanExporter) -> None:
    otel.uninstrument()
    assert not otel.is_instrumented()
    with connect_fake(server="example") as session:
        session.call_tool("echo", {"message": "x"})
    assert spans.get_finished_spans() == ()


def test_import_loads_no_opentelemetry() -> None:
    code = (
        "import sys, mcp_sync, mcp_sync.otel; "
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_missing_opentelemetry_is_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(mcp_sync.MissingExtra, match=r"pip install 'mcp-sync-client\[otel\]'") as raised:
        otel.instrument()
    assert raised.value.extra == "otel"
    assert not otel.is_instrumented()


# ------------------------------------------------------------------ the era probe


def _connect_spans(spans: InMemorySpanExporter) -> list[Any]:
    return sorted(spans.get_finished_spans(), key=lambda span: span.start_time)


def test_a_handshake_era_servers_refusal_of_the_probe_is_no_error(
    spans: InMemorySpanExporter, everything_stdio_cmd: list[str]
) -> None:
    """server-everything (the handshake era) answers ``server/discover`` with
    -32601: an answer about its era, recorded as the probe's outcome. A healthy
    connect has no span in error."""
    command, *args = everything_stdio_cmd
    with mcp_sync.connect(server="everything", command=command, args=args) as session:
        assert session.era == "legacy"
        session.call_tool("echo", {"message": "hi"})
    trace_ = _connect_spans(spans)
    assert [span.name for span in trace_] == ["server/discover", "initialize", "tools/list", "tools/call echo"]
    assert [span.status.status_code for span in trace_] == [StatusCode.UNSET] * 4
    probe = trace_[0]
    assert dict(probe.attributes) == {
        "mcp.method.name": "server/discover",
        "mcp_sync.server": "everything",
        "mcp_sync.era": "modern",
        "mcp.protocol.version": "2026-07-28",
        "network.transport": "pipe",
        "rpc.response.status_code": "-32601",
        "mcp_sync.probe.outcome": "refused",
    }


def test_a_probe_the_handshake_overtook_and_a_modern_answer(spans: InMemorySpanExporter) -> None:
    # A server that never answers the probe: the handshake, sent once the
    # server has read it, decides, and the probe is no longer waited for.
    with connect_fake("--era", "legacy", "--hang-on", "server/discover", server="quiet"):
        pass
    with connect_fake("--era", "modern", server="modern"):
        pass
    probes = [span for span in _connect_spans(spans) if span.name == "server/discover"]
    assert [(span.attributes["mcp_sync.server"], span.attributes[otel.PROBE_OUTCOME]) for span in probes] == [
        ("quiet", "superseded"),
        ("modern", "answered"),
    ]
    assert all(span.status.status_code is StatusCode.UNSET for span in spans.get_finished_spans())


def test_server_discover_refused_without_a_fallback_is_an_error(spans: InMemorySpanExporter) -> None:
    """protocol="modern" sends no probe: a refusal fails the connect, and its span says so."""
    with pytest.raises(mcp_sync.ProtocolError):
        connect_fake("--era", "legacy", protocol="modern")
    (span,) = spans.get_finished_spans()
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes["error.type"] == "remote_error"
    assert otel.PROBE_OUTCOME not in span.attributes
